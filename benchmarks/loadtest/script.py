"""The simulated users' conversations and the service's scripted model.

Every user talks about the same kinds of facts (a budget, a city, a food, a
colleague, a pet), in English or, one user in four, in Chinese, with values
of their own, so another user's memories would be good recall candidates if
isolation broke. Each user also owns a canary token, said in some turns and
nowhere else: seeing it in another user's context is a leak.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

__all__ = ["UserScript", "make_users", "scripted_answer"]

_CITIES = ["Lisbon", "Osaka", "Denver", "Tallinn", "Porto", "Kyoto", "Austin", "Ghent"]
_CITIES_ZH = ["杭州", "成都", "厦门", "西安", "青岛", "昆明", "苏州", "大连"]
_FOODS = ["ramen", "falafel", "paella", "pho", "pierogi", "tacos", "dumplings", "risotto"]
_FOODS_ZH = ["火锅", "小笼包", "烤鸭", "米线", "煎饼", "凉皮", "肠粉", "麻婆豆腐"]
_NAMES = ["Priya", "Tomás", "Ingrid", "Kenji", "Amara", "Lukas", "Sofia", "Dmitri"]
_NAMES_ZH = ["王磊", "李娜", "张伟", "刘洋", "陈静", "杨帆", "赵敏", "周杰"]
_PETS = ["a beagle", "two cats", "a parrot", "a rabbit", "a husky", "a turtle", "a corgi", "goldfish"]
_PETS_ZH = ["一只柯基", "两只猫", "一只鹦鹉", "一只兔子", "一只哈士奇", "一只乌龟", "一只比格犬", "几条金鱼"]

_EN = [
    "Hi! I'm planning a trip and my budget is {budget} dollars.",
    "I live in {city}, so flights from there work best.",
    "Please keep this code safe for me: {canary}.",
    "My favourite food is {food}, any place that serves it is a plus.",
    "My colleague {name} might join me for part of the trip.",
    "I have {pet} at home, so I need someone to look after them.",
    "What was my budget again?",
    "Actually, raise the budget to {budget2} dollars.",
    "Which city did I say I live in?",
    "{name} prefers trains over planes, can we plan for that?",
    "The code I gave you is {canary}, please don't share it.",
    "Can you list a few places near {city} with good {food}?",
    "I'd like a window seat on every flight.",
    "How much is my budget now?",
    "Remind me who is joining me.",
    "I'm allergic to peanuts, keep that in mind for restaurants.",
    "Let's plan three days, then head back to {city}.",
    "Is {canary} the code I told you about?",
    "Summarize what you know about my trip so far.",
    "Thanks, that's all for today.",
]
_ZH = [
    "你好！我在计划一次旅行，预算是{budget}元。",
    "我住在{city}，从那里出发的航班最方便。",
    "请帮我记住这个代码：{canary}。",
    "我最喜欢吃{food}，有这个的地方就更好了。",
    "我的同事{name}可能会陪我走一段。",
    "我家里有{pet}，需要有人帮忙照顾。",
    "我的预算是多少来着？",
    "其实预算可以提高到{budget2}元。",
    "我刚才说我住在哪个城市？",
    "{name}更喜欢坐火车，能按这个安排吗？",
    "我给你的代码是{canary}，请不要告诉别人。",
    "{city}附近有哪些好吃的{food}？",
    "每趟航班我都想要靠窗的座位。",
    "我现在的预算是多少？",
    "提醒我一下谁会和我一起去。",
    "我对花生过敏，选餐厅时请注意。",
    "我们安排三天，然后回{city}。",
    "{canary}是我告诉你的那个代码吗？",
    "总结一下你知道的关于这次旅行的信息。",
    "谢谢，今天就到这里。",
]


@dataclass(frozen=True)
class UserScript:
    """One simulated user: ids, canary token and the messages of each turn."""

    user_id: str
    session_id: str
    canary: str
    messages: tuple[str, ...]


def make_users(users: int, turns: int, run_id: str) -> list[UserScript]:
    """``users`` scripts of ``turns`` messages each (the 20-line script repeats past 20 turns).

    ``run_id`` goes into ids and canaries, so runs sharing a server never meet.
    """
    scripts = []
    for u in range(users):
        zh = u % 4 == 3
        digest = hashlib.sha256(f"{run_id}:{u}".encode()).hexdigest()
        canary = f"CNRY{u:03d}X{digest[:8].upper()}"
        values = {
            "budget": 1000 + 250 * u,
            "budget2": 1500 + 250 * u,
            "city": (_CITIES_ZH if zh else _CITIES)[u % 8],
            "food": (_FOODS_ZH if zh else _FOODS)[(u // 2) % 8],
            "name": (_NAMES_ZH if zh else _NAMES)[(u + 3) % 8],
            "pet": (_PETS_ZH if zh else _PETS)[(u * 5) % 8],
            "canary": canary,
        }
        lines = _ZH if zh else _EN
        # Each user's texts are their own ("#7"), as real users' are: identical texts would be
        # served from the shared vector cache and flatter the turn against its floor.
        messages = tuple(f"{lines[t % len(lines)].format(**values)} #{u}" for t in range(turns))
        scripts.append(UserScript(f"lt-{run_id}-u{u:03d}", f"lt-{run_id}-s{u:03d}", canary, messages))
    return scripts


def scripted_answer(message: str, relevant: str) -> str:
    """The service's model: deterministic, offline, and it mentions what memory gave it.

    It echoes the message and quotes the first recalled memory line, so an
    answer carries recalled text the way a real model's would (and a leaked
    memory would show in the answer too).
    """
    entries = (line.split("] ", 1)[-1].strip() for line in relevant.splitlines() if line.startswith("- ["))
    recalled = next(entries, "")
    answer = f"Noted: {message}"
    if recalled:
        answer += f" (I remember: {recalled[:120]})"
    return answer
