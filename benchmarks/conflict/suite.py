"""Generated conflict-overwrite suite: long conversations with planted facts.

Filler is real conversation from MemoryBank (``memory_bank_en.json`` /
``memory_bank_cn.json``: per user, per day, ``{"query", "response"}`` pairs),
read from a path given by the caller (never copied into the repository).
Into that filler we plant, at known turns:

* **slots**: a fact stated once (stage 0) and later changed (stage 1):
  budgets, dates, names, preferences, "not X anymore"; each slot has a
  question whose answer is the stage-1 value;
* **controls**: facts that look like a slot (same template family, other
  subject: "the wedding budget" next to "the kitchen budget", "my brother"
  next to "my sister") and are never updated: superseding them, or being
  superseded by them, is a false overwrite.

Every planted turn is a single sentence so the rule extractor's fact is the
message itself. Ground truth travels in message metadata (``suite_kind``,
``slot``, ``stage``); facts inherit it, so the harness can attribute every
recalled or superseded record. Deterministic for a given seed.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["ACKS", "Conversation", "Question", "Turn", "build_suite", "load_filler"]

ACKS = {"en": "Got it, I'll keep that in mind.", "cn": "好的，我记住了。"}


@dataclass(frozen=True)
class Turn:
    role: str
    text: str
    kind: str  # filler | plant | update | control | ack
    slot: str = ""
    stage: int = -1


@dataclass(frozen=True)
class Question:
    slot: str
    text: str
    current: str  # text of the statement that must be served
    stale: tuple[str, ...]  # texts of the statements that must not be served
    current_value: str  # value string expected in the answer (may be "" for negations)
    stale_value: str  # outdated value string ("" when it also appears in the current text)
    family: str
    control: bool = False


@dataclass
class Conversation:
    id: str
    lang: str
    filler_user: str
    turns: list[Turn] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)


# --------------------------------------------------------------------------- templates
# A family: pick(rng) -> dict of values for one slot and one control;
# plant / update / control templates; question templates.
@dataclass(frozen=True)
class Family:
    name: str
    pick: Callable[[random.Random], dict[str, str]]
    plant: tuple[str, ...]
    update: tuple[str, ...]
    question: str
    control: tuple[str, ...]
    control_question: str | tuple[str, ...]  # a tuple: one question per control template
    value_key: tuple[str, str] = ("old", "new")  # which picked fields are the old/new values
    control_span: tuple[float, float] = (0.0, 1.0)  # where the control may go, as a share of the conversation


def _two(rng: random.Random, pool: list[str]) -> tuple[str, str, str]:
    a, b, c = rng.sample(pool, 3)
    return a, b, c


def _num(rng: random.Random, lo: int, hi: int, step: int) -> tuple[str, str, str]:
    vals = rng.sample(range(lo, hi, step), 3)
    return tuple(str(v) for v in vals)  # type: ignore[return-value]


EN_TOPICS_BUDGET = [
    "kitchen renovation",
    "wedding",
    "trip to Japan",
    "new laptop",
    "birthday party",
    "car repair",
    "garden project",
    "home office",
]
EN_EVENTS = [
    "dentist appointment",
    "team meeting",
    "job interview",
    "piano lesson",
    "doctor's visit",
    "book club meeting",
    "parent-teacher conference",
    "yoga class",
]
EN_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
EN_MONTHS = ["March", "April", "May", "June", "July", "August", "September", "October"]
EN_RELATIONS = ["sister", "brother", "boss", "neighbor", "cousin", "manager", "roommate", "best friend"]
EN_NAMES = ["Emma", "Olivia", "Liam", "Noah", "Sophia", "Lucas", "Mia", "Ethan", "Chloe", "Daniel", "Grace", "Henry"]
EN_FOODS = ["sushi", "spicy food", "pizza", "coffee", "chocolate", "seafood", "red wine", "burgers", "ice cream"]
EN_CITIES = ["Boston", "Denver", "Seattle", "Chicago", "Austin", "Portland", "Atlanta", "Phoenix"]
EN_COMPANIES = ["Google", "Amazon", "Siemens", "Deloitte", "Oracle", "Pfizer", "Boeing", "Nike"]
EN_DRINKS = ["green tea", "black coffee", "orange juice", "hot chocolate", "sparkling water", "lemonade"]
EN_PETS = ["dog", "cat", "parrot", "rabbit"]
EN_HOBBIES = ["tennis", "swimming", "chess", "hiking", "running", "cycling"]


def _en_budget(rng: random.Random) -> dict[str, str]:
    t, ct, _ = _two(rng, EN_TOPICS_BUDGET)
    o, n, c = _num(rng, 1000, 20000, 500)
    return {"topic": t, "ctopic": ct, "old": o, "new": n, "cval": c}


def _en_day(rng: random.Random) -> dict[str, str]:
    e, ce, _ = _two(rng, EN_EVENTS)
    o, n, c = _two(rng, EN_DAYS)
    return {"event": e, "cevent": ce, "old": o, "new": n, "cval": c}


def _en_deadline(rng: random.Random) -> dict[str, str]:
    e, ce, _ = _two(rng, ["project", "report", "tax filing", "grant application", "thesis", "website launch"])
    m1, m2, m3 = _two(rng, EN_MONTHS)
    return {
        "thing": e,
        "cthing": ce,
        "old": f"{m1} {rng.randint(2, 28)}",
        "new": f"{m2} {rng.randint(2, 28)}",
        "cval": f"{m3} {rng.randint(2, 28)}",
    }


def _en_name(rng: random.Random) -> dict[str, str]:
    r, cr, _ = _two(rng, EN_RELATIONS)
    o, n, c = _two(rng, EN_NAMES)
    return {"rel": r, "crel": cr, "old": o, "new": n, "cval": c}


def _en_love(rng: random.Random) -> dict[str, str]:
    f, cf, _ = _two(rng, EN_FOODS)
    return {"old": f, "new": f, "cval": cf}


def _en_rent(rng: random.Random) -> dict[str, str]:
    o, n, c = _num(rng, 800, 4000, 50)
    thing, cthing, _ = _two(rng, ["rent", "phone bill", "gym membership"])
    return {"thing": thing, "cthing": cthing, "old": o, "new": n, "cval": c}


def _en_city(rng: random.Random) -> dict[str, str]:
    o, n, c = _two(rng, EN_CITIES)
    return {"old": o, "new": n, "cval": c}


def _en_company(rng: random.Random) -> dict[str, str]:
    o, n, c = _two(rng, EN_COMPANIES)
    return {"old": o, "new": n, "cval": c}


def _en_fav(rng: random.Random) -> dict[str, str]:
    o, n, _ = _two(rng, EN_DRINKS)
    _, _, h3 = _two(rng, EN_HOBBIES)
    return {"old": o, "new": n, "cval": h3}


def _en_pet(rng: random.Random) -> dict[str, str]:
    p, cp, _ = _two(rng, EN_PETS)
    o, n, c = _two(rng, EN_NAMES)
    return {"pet": p, "cpet": cp, "old": o, "new": n, "cval": c}


def _en_time(rng: random.Random) -> dict[str, str]:
    o, n, c = rng.sample([6, 7, 8, 9, 10, 11, 13, 14, 15, 16, 17, 18], 3)
    dest, cdest, _ = _two(rng, EN_CITIES)
    return {"dest": dest, "cdest": cdest, "old": f"{o}:30", "new": f"{n}:30", "cval": f"{c}:30"}


def _en_guests(rng: random.Random) -> dict[str, str]:
    o, n, c = _num(rng, 10, 200, 5)
    return {"old": o, "new": n, "cval": c}


EN_FAMILIES = [
    Family(
        "budget",
        _en_budget,
        ("The budget for the {topic} is {old} dollars.", "Our {topic} budget is {old} dollars."),
        (
            "Actually the budget for the {topic} is now {new} dollars.",
            "Update: the {topic} budget was changed to {new} dollars.",
            "We raised the budget for the {topic} to {new} dollars.",
        ),
        "What is the budget for the {topic}?",
        ("The budget for the {ctopic} is {cval} dollars.",),
        "What is the budget for the {ctopic}?",
    ),
    Family(
        "appointment day",
        _en_day,
        ("My {event} is on {old}.", "The {event} is scheduled for {old}."),
        (
            "The {event} moved to {new}.",
            "Correction: my {event} is on {new} now.",
            "They rescheduled the {event}, it is on {new} now.",
        ),
        "What day is my {event}?",
        ("My {cevent} is on {cval}.",),
        "What day is my {cevent}?",
    ),
    Family(
        "deadline",
        _en_deadline,
        ("The {thing} deadline is {old}.",),
        ("The {thing} deadline was pushed to {new}.", "Heads up, the {thing} deadline is {new} now."),
        "When is the {thing} deadline?",
        ("The {cthing} deadline is {cval}.",),
        "When is the {cthing} deadline?",
    ),
    Family(
        "relative name",
        _en_name,
        ("My {rel}'s name is {old}.", "My {rel} is called {old}."),
        ("Correction: my {rel} is called {new}.", "Sorry, I got that wrong, my {rel}'s name is {new}."),
        "What is my {rel}'s name?",
        ("My {crel}'s name is {cval}.",),
        "What is my {crel}'s name?",
    ),
    Family(
        "not anymore",
        _en_love,
        ("I love {old}.", "I really enjoy {old}."),
        (
            "I don't like {new} anymore.",
            "I'm not into {new} anymore.",
            "I stopped eating {new}, I don't like it anymore.",
        ),
        "Do I like {old}?",
        ("I love {cval}.",),
        "Do I like {cval}?",
    ),
    Family(
        "monthly cost",
        _en_rent,
        ("My monthly {thing} is {old} dollars.",),
        ("My {thing} increased to {new} dollars a month.", "The monthly {thing} is {new} dollars now."),
        "How much is my monthly {thing}?",
        ("My monthly {cthing} is {cval} dollars.",),
        "How much is my monthly {cthing}?",
    ),
    Family(
        "home city",
        _en_city,
        ("I live in {old}.", "My home is in {old}."),
        ("I moved to {new} last month, so I live in {new} now.", "I don't live in {old} anymore, I live in {new} now."),
        "Which city do I live in?",
        ("My parents live in {cval}.",),
        "Which city do my parents live in?",
    ),
    Family(
        "employer",
        _en_company,
        ("I work at {old}.",),
        ("I left {old}, I work at {new} now.", "I don't work at {old} anymore; I joined {new}."),
        "Where do I work?",
        ("My wife works at {cval}.",),
        "Where does my wife work?",
    ),
    Family(
        "favourite",
        _en_fav,
        ("My favorite drink is {old}.",),
        ("My favorite drink is now {new}.", "These days my favorite drink is {new}."),
        "What is my favorite drink?",
        ("My favorite sport is {cval}.",),
        "What is my favorite sport?",
    ),
    Family(
        "pet name",
        _en_pet,
        ("My {pet}'s name is {old}.",),
        ("We renamed the {pet}, its name is {new} now.", "Correction: my {pet} is called {new}."),
        "What is my {pet}'s name?",
        ("My {cpet}'s name is {cval}.",),
        "What is my {cpet}'s name?",
    ),
    Family(
        "departure time",
        _en_time,
        ("My flight to {dest} leaves at {old}.",),
        ("The flight to {dest} now leaves at {new}.", "They changed my flight to {dest}, it departs at {new}."),
        "When does my flight to {dest} leave?",
        ("My train to {cdest} leaves at {cval}.",),
        "When does my train to {cdest} leave?",
    ),
    Family(
        "guest count",
        _en_guests,
        ("We invited {old} guests to the party.",),
        ("Now {new} guests are coming to the party.", "The guest list grew to {new} people."),
        "How many guests are coming to the party?",
        ("We booked {cval} chairs for the conference.",),
        "How many chairs did we book for the conference?",
    ),
]

CN_TOPICS = ["装修", "婚礼", "旅游", "买电脑", "生日聚会", "修车", "搬家", "培训课程"]
CN_EVENTS = ["周会", "牙医预约", "面试", "钢琴课", "体检", "家长会", "读书会", "瑜伽课"]
CN_DAYS = ["周一", "周二", "周三", "周四", "周五", "周六", "周日"]
CN_RELATIONS = ["妹妹", "哥哥", "老板", "邻居", "表弟", "同桌", "室友", "姐姐"]
CN_NAMES = ["小红", "小明", "李华", "王芳", "张伟", "刘洋", "陈静", "赵磊", "孙丽", "周杰", "吴敏", "郑爽"]
CN_FOODS = ["火锅", "辣的东西", "寿司", "甜食", "海鲜", "咖啡", "奶茶", "烧烤", "榴莲"]
CN_CITIES = ["北京", "上海", "广州", "深圳", "杭州", "成都", "武汉", "南京"]
CN_COMPANIES = ["腾讯", "阿里巴巴", "华为", "百度", "京东", "小米", "美团", "字节跳动"]
CN_DRINKS = ["绿茶", "黑咖啡", "橙汁", "热可可", "苏打水", "柠檬水"]
CN_PETS = ["狗", "猫", "鹦鹉", "兔子"]
CN_HOBBIES = ["网球", "游泳", "象棋", "爬山", "跑步", "骑行"]


def _cn_budget(rng: random.Random) -> dict[str, str]:
    t, ct, _ = _two(rng, CN_TOPICS)
    o, n, c = _num(rng, 1000, 20000, 500)
    return {"topic": t, "ctopic": ct, "old": o, "new": n, "cval": c}


def _cn_day(rng: random.Random) -> dict[str, str]:
    e, ce, _ = _two(rng, CN_EVENTS)
    o, n, c = _two(rng, CN_DAYS)
    return {"event": e, "cevent": ce, "old": o, "new": n, "cval": c}


def _cn_deadline(rng: random.Random) -> dict[str, str]:
    e, ce, _ = _two(rng, ["项目", "报告", "报税", "论文", "网站上线", "申请材料"])
    m1, m2, m3 = rng.sample(range(3, 12), 3)
    return {
        "thing": e,
        "cthing": ce,
        "old": f"{m1}月{rng.randint(2, 28)}日",
        "new": f"{m2}月{rng.randint(2, 28)}日",
        "cval": f"{m3}月{rng.randint(2, 28)}日",
    }


def _cn_name(rng: random.Random) -> dict[str, str]:
    r, cr, _ = _two(rng, CN_RELATIONS)
    o, n, c = _two(rng, CN_NAMES)
    return {"rel": r, "crel": cr, "old": o, "new": n, "cval": c}


def _cn_love(rng: random.Random) -> dict[str, str]:
    f, cf, _ = _two(rng, CN_FOODS)
    return {"old": f, "new": f, "cval": cf}


def _cn_rent(rng: random.Random) -> dict[str, str]:
    o, n, c = _num(rng, 800, 9000, 100)
    thing, cthing, _ = _two(rng, ["房租", "话费", "健身卡"])
    return {"thing": thing, "cthing": cthing, "old": o, "new": n, "cval": c}


def _cn_city(rng: random.Random) -> dict[str, str]:
    o, n, c = _two(rng, CN_CITIES)
    return {"old": o, "new": n, "cval": c}


def _cn_company(rng: random.Random) -> dict[str, str]:
    o, n, c = _two(rng, CN_COMPANIES)
    return {"old": o, "new": n, "cval": c}


def _cn_fav(rng: random.Random) -> dict[str, str]:
    o, n, _ = _two(rng, CN_DRINKS)
    h = rng.choice(CN_HOBBIES)
    return {"old": o, "new": n, "cval": h}


def _cn_pet(rng: random.Random) -> dict[str, str]:
    p, cp, _ = _two(rng, CN_PETS)
    o, n, c = _two(rng, CN_NAMES)
    return {"pet": p, "cpet": cp, "old": o, "new": n, "cval": c}


def _cn_time(rng: random.Random) -> dict[str, str]:
    o, n, c = rng.sample([6, 7, 8, 9, 10, 11, 13, 14, 15, 16, 17, 18], 3)
    dest, cdest, _ = _two(rng, CN_CITIES)
    return {"dest": dest, "cdest": cdest, "old": f"{o}点半", "new": f"{n}点半", "cval": f"{c}点半"}


def _cn_guests(rng: random.Random) -> dict[str, str]:
    o, n, c = _num(rng, 10, 200, 5)
    return {"old": o, "new": n, "cval": c}


CN_FAMILIES = [
    Family(
        "budget",
        _cn_budget,
        ("我的{topic}预算是{old}元。", "{topic}的预算定为{old}元。"),
        ("{topic}预算调整到{new}元了。", "其实{topic}预算现在是{new}元。", "{topic}的预算改成{new}元。"),
        "我的{topic}预算是多少？",
        ("{ctopic}的预算是{cval}元。",),
        "{ctopic}的预算是多少？",
    ),
    Family(
        "appointment day",
        _cn_day,
        ("{event}定在{old}。", "我的{event}是{old}。"),
        ("{event}改到{new}了。", "更正一下，{event}改成{new}。", "{event}换到{new}了。"),
        "我的{event}是哪天？",
        ("{cevent}定在{cval}。",),
        "{cevent}是哪天？",
    ),
    Family(
        "deadline",
        _cn_deadline,
        ("{thing}的截止日期是{old}。",),
        ("{thing}的截止日期推迟到{new}了。", "{thing}截止日期改为{new}。"),
        "{thing}的截止日期是哪天？",
        ("{cthing}的截止日期是{cval}。",),
        "{cthing}的截止日期是哪天？",
    ),
    Family(
        "relative name",
        _cn_name,
        ("我{rel}叫{old}。", "我{rel}的名字是{old}。"),
        ("更正一下，我{rel}的名字是{new}。", "我说错了，我{rel}叫{new}。"),
        "我{rel}叫什么名字？",
        ("我{crel}叫{cval}。",),
        "我{crel}叫什么名字？",
    ),
    Family(
        "not anymore",
        _cn_love,
        ("我很喜欢吃{old}。", "我最爱吃{old}了。"),
        ("我现在不喜欢吃{new}了。", "我已经不吃{new}了。", "我以后不再吃{new}了。"),
        "我喜欢吃{old}吗？",
        ("我很喜欢吃{cval}。",),
        "我喜欢吃{cval}吗？",
    ),
    Family(
        "monthly cost",
        _cn_rent,
        ("我每个月的{thing}是{old}元。",),
        ("{thing}涨到每月{new}元了。", "我每个月的{thing}现在是{new}元。"),
        "我每个月的{thing}是多少？",
        ("我每个月的{cthing}是{cval}元。",),
        "我每个月的{cthing}是多少？",
    ),
    Family(
        "home city",
        _cn_city,
        ("我住在{old}。", "我家在{old}。"),
        ("我上个月搬到{new}了，现在住在{new}。", "我已经不住在{old}了，现在住在{new}。"),
        "我住在哪个城市？",
        ("我父母住在{cval}。",),
        "我父母住在哪个城市？",
    ),
    Family(
        "employer",
        _cn_company,
        ("我在{old}工作。",),
        ("我从{old}离职了，现在在{new}工作。", "我已经不在{old}上班了，现在在{new}。"),
        "我在哪家公司工作？",
        ("我老婆在{cval}工作。",),
        "我老婆在哪家公司工作？",
    ),
    Family(
        "favourite",
        _cn_fav,
        ("我最喜欢的饮料是{old}。",),
        ("我现在最喜欢的饮料是{new}。", "最近我最喜欢的饮料变成了{new}。"),
        "我最喜欢的饮料是什么？",
        ("我最喜欢的运动是{cval}。",),
        "我最喜欢的运动是什么？",
    ),
    Family(
        "pet name",
        _cn_pet,
        ("我的{pet}叫{old}。",),
        ("我们给{pet}改名了，现在叫{new}。", "更正：我的{pet}叫{new}。"),
        "我的{pet}叫什么名字？",
        ("我的{cpet}叫{cval}。",),
        "我的{cpet}叫什么名字？",
    ),
    Family(
        "departure time",
        _cn_time,
        ("我去{dest}的航班{old}起飞。",),
        ("去{dest}的航班改到{new}起飞了。", "航空公司通知我，去{dest}的航班改成{new}起飞。"),
        "我去{dest}的航班几点起飞？",
        ("我去{cdest}的火车{cval}出发。",),
        "我去{cdest}的火车几点出发？",
    ),
    Family(
        "guest count",
        _cn_guests,
        ("我们邀请了{old}位客人来参加聚会。",),
        ("现在有{new}位客人来参加聚会。", "聚会的客人增加到{new}位了。"),
        "有多少位客人来参加聚会？",
        ("我们为会议订了{cval}把椅子。",),
        "我们为会议订了多少把椅子？",
    ),
]

FAMILIES = {"en": EN_FAMILIES, "cn": CN_FAMILIES}


# --------------------------------------------------------------------------- filler
def load_filler(path: str | Path) -> dict[str, list[tuple[str, str]]]:
    """MemoryBank dialogues: user name -> [(query, response), ...] in day order."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    out: dict[str, list[tuple[str, str]]] = {}
    for user, item in data.items():
        pairs = []
        for day in sorted(item.get("history", {})):
            for turn in item["history"][day]:
                q, r = str(turn.get("query", "")).strip(), str(turn.get("response", "")).strip()
                if q and r:
                    pairs.append((q, r))
        if pairs:
            out[user] = pairs
    return out


# --------------------------------------------------------------------------- assembly
def _fmt(template: str, values: dict[str, str]) -> str:
    return template.format(**values)


def build_conversation(
    conv_id: str,
    lang: str,
    filler: list[tuple[str, str]],
    filler_user: str,
    rng: random.Random,
    *,
    updates: int,
    controls: int,
    filler_pairs: int,
    extra: Sequence[Family] = (),
    extra_rng: random.Random | None = None,
) -> Conversation:
    """``extra`` families (each with its control) are planted with ``extra_rng``,
    so the rest of the conversation is the same with or without them."""
    families = rng.sample(FAMILIES[lang], min(updates, len(FAMILIES[lang])))
    conv = Conversation(conv_id, lang, filler_user)
    start = rng.randrange(0, max(1, len(filler) - filler_pairs))
    pairs = [filler[(start + i) % len(filler)] for i in range(filler_pairs)]
    n_slots = filler_pairs + len(families) * 2 + min(controls, len(families))
    # Positions in the merged sequence: plants early, updates later, controls anywhere.
    events: list[tuple[float, Turn]] = []
    for i, (q, r) in enumerate(pairs):
        events.append((i + 0.5, Turn("user", q, "filler")))
        events.append((i + 0.6, Turn("assistant", r, "filler")))
    span = float(filler_pairs)
    control_families = set(rng.sample(range(len(families)), min(controls, len(families))))
    for j, fam in enumerate(families):
        slot = f"{conv_id}/{fam.name}"
        values = fam.pick(rng)
        plant = _fmt(rng.choice(fam.plant), values)
        update = _fmt(rng.choice(fam.update), values)
        t_plant = rng.uniform(0.0, 0.45) * span
        t_update = rng.uniform(0.55, 1.0) * span
        events.append((t_plant, Turn("user", plant, "plant", slot, 0)))
        events.append((t_update, Turn("user", update, "update", slot, 1)))
        new_value, old_value = values["new"], values["old"]
        conv.questions.append(
            Question(
                slot,
                _fmt(fam.question, values),
                update,
                (plant,),
                current_value="" if new_value == old_value else new_value,
                stale_value="" if old_value in update else old_value,
                family=fam.name,
            )
        )
        if j in control_families:
            cslot = f"{conv_id}/control:{fam.name}"
            control = _fmt(rng.choice(fam.control), values)
            # Half the controls come after the slot's plant, half after its update.
            t_control = rng.uniform(0.0, 1.0) * span
            events.append((t_control, Turn("user", control, "control", cslot, 0)))
            conv.questions.append(
                Question(
                    cslot,
                    _fmt(str(fam.control_question), values),
                    control,
                    (),
                    current_value=values["cval"],
                    stale_value="",
                    family=fam.name,
                    control=True,
                )
            )
    xr = extra_rng or random.Random(conv_id)
    for fam in extra:
        slot = f"{conv_id}/{fam.name}"
        values = fam.pick(xr)
        plant = _fmt(xr.choice(fam.plant), values)
        update = _fmt(xr.choice(fam.update), values)
        events.append((xr.uniform(0.0, 0.45) * span, Turn("user", plant, "plant", slot, 0)))
        events.append((xr.uniform(0.55, 1.0) * span, Turn("user", update, "update", slot, 1)))
        conv.questions.append(
            Question(
                slot,
                _fmt(fam.question, values),
                update,
                (plant,),
                current_value="" if values["new"] == values["old"] else values["new"],
                stale_value="" if values["old"] in update else values["old"],
                family=fam.name,
            )
        )
        ci = xr.randrange(len(fam.control))
        control = _fmt(fam.control[ci], values)
        cq = fam.control_question if isinstance(fam.control_question, str) else fam.control_question[ci]
        events.append(
            (xr.uniform(*fam.control_span) * span, Turn("user", control, "control", f"{conv_id}/control:{fam.name}", 0))
        )
        conv.questions.append(
            Question(
                f"{conv_id}/control:{fam.name}",
                _fmt(cq, values),
                control,
                (),
                current_value=values["cval"],
                stale_value="",
                family=fam.name,
                control=True,
            )
        )
    events.sort(key=lambda e: e[0])
    for _, turn in events:
        conv.turns.append(turn)
        if turn.kind != "filler":
            conv.turns.append(Turn("assistant", ACKS[lang], "ack"))  # no slot: never counts as stale
    assert len(conv.turns) >= n_slots
    return conv


def build_suite(
    filler_path: str | Path,
    lang: str,
    *,
    conversations: int = 20,
    updates: int = 12,
    controls: int = 6,
    filler_pairs: int = 30,
    filler_users: int = 8,
    seed: int = 0,
    suite: str = "current",
    owner_updates: int = 10,
) -> list[Conversation]:
    """``conversations`` conversations of ``filler_pairs`` MemoryBank pairs each,
    with ``updates`` updated slots and ``controls`` control facts planted.

    ``suite="extended"`` adds, to the same conversations, ``owner_updates``
    slots from :mod:`owner_families` (other people's attributes, negated
    preferences), each with its look-alike control."""
    if suite not in ("current", "extended"):
        raise ValueError(f"suite: got {suite!r}, expected 'current' or 'extended'")
    rng = random.Random(f"{seed}-{lang}")
    filler = load_filler(filler_path)
    users = sorted(filler)[:filler_users]  # fewer distinct filler texts: cheaper to embed on a CPU
    extra_families: list[Family] = []
    if suite == "extended":
        from owner_families import OWNER_FAMILIES  # imports this module: load it only when asked

        extra_families = OWNER_FAMILIES[lang]
    convs = []
    for i in range(conversations):
        xr = random.Random(f"{seed}-{lang}-{i}-owners")
        extra = xr.sample(extra_families, min(owner_updates, len(extra_families))) if extra_families else []
        convs.append(
            build_conversation(
                f"{lang}-{i:02d}",
                lang,
                filler[users[i % len(users)]],
                users[i % len(users)],
                rng,
                updates=updates,
                controls=controls,
                filler_pairs=filler_pairs,
                extra=extra,
                extra_rng=xr,
            )
        )
    return convs


def turn_metadata(conv: Conversation, index: int, turn: Turn) -> dict[str, Any]:
    return {"suite_kind": turn.kind, "slot": turn.slot, "stage": turn.stage, "turn": index}
