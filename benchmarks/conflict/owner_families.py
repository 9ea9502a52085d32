"""Look-alike families about other people's attributes and negated preferences.

Added by ``--suite extended`` on top of the current families (same
conversations, same filler; these slots are drawn with their own random
stream, so the current part of each conversation is unchanged). Each
family's control is the same attribute of another owner: the user's age
next to a relative's age, the user's flight next to a colleague's flight to
the same city, a relative's new employer next to another person's employer,
"I don't like X" next to "my wife loves X". A control must neither
supersede the slot nor be superseded by it. Owners vary between relatives,
colleagues and people named by their first name, in English and Chinese.

Controls are placed in the later part of the conversation (often after the
slot's update), where a false overwrite would hide the user's current value.
"""

from __future__ import annotations

import random

from suite import Family, _num, _two

__all__ = ["OWNER_FAMILIES"]

_LATE = (0.3, 1.0)

EN_PEOPLE = [
    "wife",
    "husband",
    "mom",
    "dad",
    "sister",
    "brother",
    "colleague",
    "coworker",
    "boss",
    "best friend",
    "roommate",
    "neighbor",
    "son",
    "daughter",
]
EN_FIRST_NAMES = ["Anna", "Peter", "Julia", "Marco", "Sarah", "David", "Laura", "Kevin", "Nina", "Oscar"]
EN_ABROAD = ["Tokyo", "Paris", "Rome", "Madrid"]
EN_ABROAD2 = ["Seoul", "Lisbon", "Dublin", "Vienna"]
EN_EU_CITIES = ["Berlin", "Munich", "Zurich", "Prague", "Oslo", "Milan", "Geneva", "Krakow"]
EN_STREETS = ["Oak Street", "Maple Avenue", "Pine Road", "Cedar Lane", "Elm Street", "Hill Road", "Lake Drive"]
EN_EMPLOYERS = ["Intel", "Adobe", "Spotify", "Netflix", "Shell", "Unilever", "Toyota", "Visa"]
EN_FOODS2 = ["olives", "mushrooms", "blue cheese", "oysters", "tofu", "eggplant", "cilantro", "licorice"]
EN_MONTHS2 = ["March", "April", "May", "June", "July", "August", "September", "October"]


def _people(rng: random.Random) -> dict[str, str]:
    """Two different other people: a relation and a first name."""
    a, b = rng.sample(EN_PEOPLE, 2)
    return {"rel": a, "rel2": b, "who": rng.choice(EN_FIRST_NAMES)}


def _en_age(rng: random.Random) -> dict[str, str]:
    o, n, c = (str(v) for v in rng.sample(range(22, 70), 3))
    return dict(old=o, new=n, cval=c, **_people(rng))


def _en_food_budget(rng: random.Random) -> dict[str, str]:
    o, n, c = _num(rng, 200, 1500, 50)
    return dict(old=o, new=n, cval=c, **_people(rng))


def _en_flight(rng: random.Random, pool: list[str] = EN_ABROAD) -> dict[str, str]:
    o, n, c = rng.sample([6, 7, 8, 9, 10, 11, 13, 14, 15, 16, 17, 18, 19, 20], 3)
    return dict(dest=rng.choice(pool), old=f"{o}:15", new=f"{n}:15", cval=f"{c}:15", **_people(rng))


def _en_flight2(rng: random.Random) -> dict[str, str]:
    return _en_flight(rng, EN_ABROAD2)


def _en_address(rng: random.Random) -> dict[str, str]:
    s1, s2, s3 = _two(rng, EN_STREETS)
    n1, n2, n3 = (str(v) for v in rng.sample(range(3, 220), 3))
    return dict(old=f"{n1} {s1}", new=f"{n2} {s2}", cval=f"{n3} {s3}", **_people(rng))


def _en_employer(rng: random.Random) -> dict[str, str]:
    o, n, c = _two(rng, EN_EMPLOYERS)
    return dict(old=o, new=n, cval=c, **_people(rng))


def _en_city(rng: random.Random) -> dict[str, str]:
    o, n, c = _two(rng, EN_EU_CITIES)
    return dict(old=o, new=n, cval=c, **_people(rng))


def _en_food(rng: random.Random, pool: list[str] = EN_FOODS2[:4]) -> dict[str, str]:
    f = rng.choice(pool)
    return dict(old=f, new=f, cval=f, **_people(rng))


def _en_food2(rng: random.Random) -> dict[str, str]:
    return _en_food(rng, EN_FOODS2[4:])  # not the other negation family's food: one liking per food


def _en_due(rng: random.Random) -> dict[str, str]:
    m1, m2, m3 = _two(rng, EN_MONTHS2)
    return dict(
        old=f"{m1} {rng.randint(2, 28)}",
        new=f"{m2} {rng.randint(2, 28)}",
        cval=f"{m3} {rng.randint(2, 28)}",
        **_people(rng),
    )


EN_OWNER_FAMILIES = [
    Family(
        "own age vs other's age",
        _en_age,
        ("I am {old} years old.", "I'm {old} years old."),
        ("Correction: I am {new} years old.", "I'm {new} years old now."),
        "How old am I?",
        ("My {rel} is {cval} years old.", "{who} is {cval} years old.", "My {rel} just turned {cval}."),
        ("How old is my {rel}?", "How old is {who}?", "How old is my {rel}?"),
        control_span=_LATE,
    ),
    Family(
        "own budget vs other's budget",
        _en_food_budget,
        ("My monthly food budget is {old} dollars.",),
        ("Actually my monthly food budget is now {new} dollars.", "The food budget is now {new} dollars a month."),
        "What is my monthly food budget?",
        ("My {rel}'s monthly food budget is {cval} dollars.", "{who}'s monthly food budget is {cval} dollars."),
        ("What is my {rel}'s monthly food budget?", "What is {who}'s monthly food budget?"),
        control_span=_LATE,
    ),
    Family(
        "own flight vs other's flight",
        _en_flight,
        ("My flight to {dest} leaves at {old}.",),
        ("My flight to {dest} now leaves at {new}.", "The airline moved my flight to {dest}, it leaves at {new}."),
        "When does my flight to {dest} leave?",
        ("My {rel}'s flight to {dest} leaves at {cval}.", "{who}'s flight to {dest} leaves at {cval}."),
        ("When does my {rel}'s flight to {dest} leave?", "When does {who}'s flight to {dest} leave?"),
        control_span=_LATE,
    ),
    Family(
        "own address vs other's address",
        _en_address,
        ("My address is {old}.",),
        ("My address is now {new}.", "We moved, my address is {new} now."),
        "What is my address?",
        ("My {rel}'s address is {cval}.", "{who}'s address is {cval}."),
        ("What is my {rel}'s address?", "What is {who}'s address?"),
        control_span=_LATE,
    ),
    Family(
        "other's employer vs another's",
        _en_employer,
        ("My {rel} works at {old}.",),
        ("My {rel} left {old} and works at {new} now.", "My {rel} changed jobs, my {rel} works at {new} now."),
        "Where does my {rel} work?",
        ("My {rel2} works at {cval}.", "{who} works at {cval}."),
        ("Where does my {rel2} work?", "Where does {who} work?"),
        control_span=_LATE,
    ),
    Family(
        "other's flight vs own flight",
        _en_flight2,
        ("My {rel}'s flight to {dest} leaves at {old}.",),
        (
            "My {rel}'s flight to {dest} now leaves at {new}.",
            "The airline moved my {rel}'s flight to {dest}, it leaves at {new} now.",
        ),
        "When does my {rel}'s flight to {dest} leave?",
        ("My flight to {dest} leaves at {cval}.",),
        "When does my own flight to {dest} leave?",
        control_span=_LATE,
    ),
    Family(
        "other's city vs another's",
        _en_city,
        ("My {rel} lives in {old}.",),
        ("My {rel} moved to {new}, so my {rel} lives in {new} now.", "My {rel} lives in {new} now."),
        "Which city does my {rel} live in?",
        ("My {rel2} lives in {cval}.", "{who} lives in {cval}."),
        ("Which city does my {rel2} live in?", "Which city does {who} live in?"),
        control_span=_LATE,
    ),
    Family(
        "like -> don't like",
        _en_food,
        ("I like {old}.", "I love {old}."),
        ("I don't like {new}.", "I do not like {new}.", "I no longer like {new}."),
        "Do I like {old}?",
        ("My {rel} loves {cval}.", "{who} likes {cval}."),
        ("Does my {rel} like {cval}?", "Does {who} like {cval}?"),
        control_span=_LATE,
    ),
    Family(
        "don't like -> like",
        _en_food2,
        ("I don't like {old}.", "I hate {old}."),
        ("I like {new} now.", "Actually I love {new} these days."),
        "Do I like {old}?",
        ("My {rel} doesn't like {cval}.", "{who} hates {cval}."),
        ("Does my {rel} like {cval}?", "Does {who} like {cval}?"),
        control_span=_LATE,
    ),
    Family(
        "own due date vs other's",
        _en_due,
        ("My essay is due on {old}.",),
        ("My essay is now due on {new}.", "The due date of my essay moved to {new}."),
        "When is my essay due?",
        ("My {rel}'s essay is due on {cval}.", "{who}'s essay is due on {cval}."),
        ("When is my {rel}'s essay due?", "When is {who}'s essay due?"),
        control_span=_LATE,
    ),
]

CN_PEOPLE = ["老婆", "老公", "妈", "爸", "妈妈", "姐姐", "哥哥", "弟弟", "同事", "老板", "室友", "邻居", "朋友", "女儿"]
CN_FIRST_NAMES = ["李强", "王丽", "张敏", "刘刚", "陈芳", "杨帆", "小军", "小芳"]
CN_ABROAD = ["东京", "巴黎", "首尔", "曼谷"]
CN_ABROAD2 = ["新加坡", "悉尼", "伦敦", "罗马"]
CN_CITIES2 = ["西安", "重庆", "天津", "苏州", "青岛", "厦门", "长沙", "昆明"]
CN_ROADS = ["人民路", "解放路", "中山路", "建设路", "和平路", "长江路", "黄河路"]
CN_EMPLOYERS = ["网易", "联想", "格力", "海尔", "比亚迪", "中兴", "携程", "顺丰"]
CN_FOODS2 = ["香菜", "臭豆腐", "苦瓜", "羊肉", "螺蛳粉", "芒果", "生蚝", "韭菜"]


def _cn_people(rng: random.Random) -> dict[str, str]:
    a, b = rng.sample(CN_PEOPLE, 2)
    return {"rel": a, "rel2": b, "who": rng.choice(CN_FIRST_NAMES)}


def _cn_age(rng: random.Random) -> dict[str, str]:
    o, n, c = (str(v) for v in rng.sample(range(22, 70), 3))
    return dict(old=o, new=n, cval=c, **_cn_people(rng))


def _cn_food_budget(rng: random.Random) -> dict[str, str]:
    o, n, c = _num(rng, 800, 5000, 100)
    return dict(old=o, new=n, cval=c, **_cn_people(rng))


def _cn_flight(rng: random.Random, pool: list[str] = CN_ABROAD) -> dict[str, str]:
    o, n, c = rng.sample([6, 7, 8, 9, 10, 11, 13, 14, 15, 16, 17, 18, 19, 20], 3)
    return dict(dest=rng.choice(pool), old=f"{o}点", new=f"{n}点", cval=f"{c}点", **_cn_people(rng))


def _cn_flight2(rng: random.Random) -> dict[str, str]:
    return _cn_flight(rng, CN_ABROAD2)


def _cn_address(rng: random.Random) -> dict[str, str]:
    r1, r2, r3 = _two(rng, CN_ROADS)
    n1, n2, n3 = (str(v) for v in rng.sample(range(3, 220), 3))
    return dict(old=f"{r1}{n1}号", new=f"{r2}{n2}号", cval=f"{r3}{n3}号", **_cn_people(rng))


def _cn_employer(rng: random.Random) -> dict[str, str]:
    o, n, c = _two(rng, CN_EMPLOYERS)
    return dict(old=o, new=n, cval=c, **_cn_people(rng))


def _cn_city(rng: random.Random) -> dict[str, str]:
    o, n, c = _two(rng, CN_CITIES2)
    return dict(old=o, new=n, cval=c, **_cn_people(rng))


def _cn_food(rng: random.Random, pool: list[str] = CN_FOODS2[:4]) -> dict[str, str]:
    f = rng.choice(pool)
    return dict(old=f, new=f, cval=f, **_cn_people(rng))


def _cn_food2(rng: random.Random) -> dict[str, str]:
    return _cn_food(rng, CN_FOODS2[4:])


def _cn_due(rng: random.Random) -> dict[str, str]:
    m1, m2, m3 = rng.sample(range(3, 12), 3)
    return dict(
        old=f"{m1}月{rng.randint(2, 28)}日",
        new=f"{m2}月{rng.randint(2, 28)}日",
        cval=f"{m3}月{rng.randint(2, 28)}日",
        **_cn_people(rng),
    )


CN_OWNER_FAMILIES = [
    Family(
        "own age vs other's age",
        _cn_age,
        ("我今年{old}岁。",),
        ("更正一下，我今年{new}岁。", "我现在{new}岁了。"),
        "我今年多大？",
        ("我{rel}今年{cval}岁。", "{who}今年{cval}岁。"),
        ("我{rel}今年多大？", "{who}今年多大？"),
        control_span=_LATE,
    ),
    Family(
        "own budget vs other's budget",
        _cn_food_budget,
        ("我每个月的伙食预算是{old}元。",),
        ("我每个月的伙食预算现在是{new}元。", "伙食预算调整到每月{new}元了。"),
        "我每个月的伙食预算是多少？",
        ("我{rel}每个月的伙食预算是{cval}元。", "{who}的伙食预算是每月{cval}元。"),
        ("我{rel}每个月的伙食预算是多少？", "{who}每个月的伙食预算是多少？"),
        control_span=_LATE,
    ),
    Family(
        "own flight vs other's flight",
        _cn_flight,
        ("我去{dest}的航班{old}起飞。",),
        ("我去{dest}的航班改到{new}起飞了。", "航空公司把我去{dest}的航班改到了{new}。"),
        "我去{dest}的航班几点起飞？",
        ("我{rel}去{dest}的航班{cval}起飞。", "{who}去{dest}的航班{cval}起飞。"),
        ("我{rel}去{dest}的航班几点起飞？", "{who}去{dest}的航班几点起飞？"),
        control_span=_LATE,
    ),
    Family(
        "own address vs other's address",
        _cn_address,
        ("我家的地址是{old}。",),
        ("我家的地址改成{new}了。", "我们搬家了，现在地址是{new}。"),
        "我家的地址是什么？",
        ("我{rel}家的地址是{cval}。", "{who}家的地址是{cval}。"),
        ("我{rel}家的地址是什么？", "{who}家的地址是什么？"),
        control_span=_LATE,
    ),
    Family(
        "other's employer vs another's",
        _cn_employer,
        ("我{rel}在{old}工作。",),
        ("我{rel}跳槽了，现在在{new}工作。", "我{rel}已经不在{old}了，现在在{new}上班。"),
        "我{rel}在哪家公司工作？",
        ("我{rel2}在{cval}工作。", "{who}在{cval}上班。"),
        ("我{rel2}在哪家公司工作？", "{who}在哪家公司工作？"),
        control_span=_LATE,
    ),
    Family(
        "other's flight vs own flight",
        _cn_flight2,
        ("我{rel}去{dest}的航班{old}起飞。",),
        ("我{rel}去{dest}的航班改到{new}起飞了。", "航空公司通知我{rel}，去{dest}的航班改成{new}起飞。"),
        "我{rel}去{dest}的航班几点起飞？",
        ("我去{dest}的航班{cval}起飞。",),
        "我自己去{dest}的航班几点起飞？",
        control_span=_LATE,
    ),
    Family(
        "other's city vs another's",
        _cn_city,
        ("我{rel}住在{old}。",),
        ("我{rel}搬到{new}了，现在住在{new}。", "我{rel}现在住在{new}。"),
        "我{rel}住在哪个城市？",
        ("我{rel2}住在{cval}。", "{who}住在{cval}。"),
        ("我{rel2}住在哪个城市？", "{who}住在哪个城市？"),
        control_span=_LATE,
    ),
    Family(
        "like -> don't like",
        _cn_food,
        ("我喜欢吃{old}。", "我很爱吃{old}。"),
        ("我不喜欢吃{new}。", "我不爱吃{new}。", "我其实不喜欢{new}。"),
        "我喜欢吃{old}吗？",
        ("我{rel}很喜欢吃{cval}。", "{who}爱吃{cval}。"),
        ("我{rel}喜欢吃{cval}吗？", "{who}喜欢吃{cval}吗？"),
        control_span=_LATE,
    ),
    Family(
        "don't like -> like",
        _cn_food2,
        ("我不喜欢吃{old}。", "我讨厌{old}。"),
        ("我现在喜欢吃{new}了。", "其实我很喜欢{new}。"),
        "我喜欢吃{old}吗？",
        ("我{rel}不喜欢吃{cval}。", "{who}讨厌{cval}。"),
        ("我{rel}喜欢吃{cval}吗？", "{who}喜欢{cval}吗？"),
        control_span=_LATE,
    ),
    Family(
        "own due date vs other's",
        _cn_due,
        ("我的作业{old}截止。",),
        ("我的作业改到{new}截止了。", "我的作业截止日期推迟到{new}。"),
        "我的作业哪天截止？",
        ("我{rel}的作业{cval}截止。", "{who}的作业{cval}截止。"),
        ("我{rel}的作业哪天截止？", "{who}的作业哪天截止？"),
        control_span=_LATE,
    ),
]

OWNER_FAMILIES = {"en": EN_OWNER_FAMILIES, "cn": CN_OWNER_FAMILIES}
