"""The same slot with a new value, said in other words (#44): the pure rule, and through a core.

Unit tier: the rule on sentence pairs, and the write path with the hashing embedder. The rates on
the frozen supersede set are a benchmark (benchmarks/supersede).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from memory_vec import MemoryConfig, MemoryCore, WriteEvent
from memory_vec._rules.slots import same_words_new_value, slot_correction, slot_update, slots


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("My rent is $1,200.", "My rent's $1,350 a month."),
        ("My favorite band is Coldplay.", "My favorite band is Arctic Monkeys, no contest."),
        ("My manager is Priya.", "My manager is Daniel, he's pretty chill."),
        ("Our office move budget is 40k.", "We pushed up the office move budget to 55k."),
        ("I drink coffee every morning.", "I've quit coffee completely, three weeks now."),
        ("I'm on the keto diet.", "Done with keto. Not doing it anymore."),
        ("房租每月2500。", "房租一个月2700。"),
        ("降压药我一天吃一片。", "降压药我一天吃两片。"),
        ("我每天喝两升水。", "我一天喝三升水。"),
        ("女儿在学芭蕾。", "女儿这学期不学芭蕾了。"),
        ("我开通了WPS会员。", "WPS会员已经退订了，公司给买了正版Office。"),
        ("Our kitchen budget is 5000 euros.", "Kitchen budget: 8000 euros, appliances included."),  # a label
        ("Our parking spot is B14.", "Our parking spot is C02."),  # an identifier set after a copula is a value
        ("我每周去三次健身房。", "我每周去两次健身房。"),  # 三次 / 两次 are values, not modifiers of 健身房
        ("我们装修预算5000块。", "装修预算是8000块，家电也算在里面。"),  # 也 in a clause without the value
        ("We have a Costco membership.", "We let the Costco membership lapse."),
        ("I'm dating someone named Chris.", "Chris and I broke up, I'm single."),
        ("我晚饭会喝点酒。", "我彻底戒酒了。"),
        ("我在兼职跑外卖。", "外卖兼职不干了。"),
        ("手机开着iCloud备份。", "iCloud备份我关了。"),
        ("我每周去两次游泳。", "现在增加到每周三次游泳了。"),  # 每周三次 is a count, not Wednesday
        ("我在闲鱼上卖东西。", "我已经不在闲鱼上卖东西了，太费精力。"),
    ],
)
def test_a_restated_or_ended_slot_supersedes(old: str, new: str) -> None:
    assert slot_update(new, old), (old, new)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # two entities: another modifier, another identifier, a number that says which one
        ("Our kitchen budget is 5000 euros.", "Our wedding budget is 15,000 euros."),
        ("The Netflix password hint is 'pizza'.", "The Hulu password hint is 'beach 2019'."),
        ("The Q1 report is due April 10.", "The Q2 report is due July 10."),
        ("The budget for the trip to Japan is 4000 dollars.", "The home office budget was changed to 11000 dollars."),
        ("厨房装修预算5000。", "婚礼预算五万。"),
        ("汽车保险一年4200。", "电动车保险一年才120。"),
        # templated chat lines: the number names the line, it is not a value (the report)
        ("Chat line 18: I watched a film about oceans.", "Chat line 19: I watched a film about chess."),
        ("gym session on day 3", "gym session on day 4"),
        ("secret of 'a\"b' in 'a\"b'", "secret of 'a\"b' in \"it's\""),  # hostile ids, quoted (test_isolation)
        ('the note "alpha" is in folder "x"', 'the note "alpha" is in folder "y"'),
        ("Turn 4 about the venue, the catering and the guest list", "Turn 5 about the venue, the catering"),
        # another attribute of the same thing: the kinds of value differ, or the predicate does
        ("My rent is $1,400.", "My rent is due on the 1st."),
        ("My flight leaves at 9am.", "My flight lands at 2pm."),
        ("My dog is 6 years old.", "My dog weighs 22 kg."),
        ("房租3000。", "房租每月5号交。"),
        ("健身卡每月200。", "健身卡到12月底到期。"),
        ("生日派对预算3000。", "生日派对请了25个人。"),
        # added, not replaced
        ("I'm allergic to peanuts.", "I'm also allergic to penicillin."),
        ("我对花生过敏。", "我对芒果也过敏。"),
        # two classes, not one moved: two values differ without a change word
        ("The Monday yoga class is at 6pm.", "The Wednesday yoga class is at 7:30pm."),
        # an ending that is not one, or that names something else
        ("I keep going to the gym.", "I won't quit the gym, no matter what."),
        ("我很无助。", "我不再那么无助了。"),
        # what happened on a day, not a value that holds
        ("Lunch was $12 at the deli.", "Lunch was $15 at the deli today."),
        # chat: a greeting's name, a speaker prefix
        ("Caroline: Thanks, Melanie. It means a lot.", "Caroline: Thanks Mel, it means a lot to me."),
    ],
)
def test_two_things_or_more_of_one_thing_do_not(old: str, new: str) -> None:
    assert not slot_update(new, old), (old, new)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("My birthday is March 12.", "Oops, March 21. Typo earlier."),
        ("My license plate is 7KLM218.", "Sorry, 7KLM281."),
        ("I weigh 180 lbs.", "Eh, more like 187 honestly, I was lowballing."),
        ("Our gate is B22.", "Correction — gate C22, different terminal."),
        ("我妈叫刘玲。", "打错字了，是刘琳。"),
        ("跑团早上6点集合。", "更正一下，6点半集合。"),
        # the old value denied: "X, not Y"
        ("My seat is 17C.", "Sorry, typo — 17D, not 17C."),
        ("I earn 55k a year.", "Not 55, it's 58k gross."),
        ("My parking spot is P12.", "Sorry, spot 21, not 12."),
        ("狗狗体重30斤。", "是30公斤，不是斤，它是大狗。"),
        ("宠物医院约的下午2点。", "是下午3点，不是2点。"),
    ],
)
def test_a_correction_of_the_value_just_said(old: str, new: str) -> None:
    assert slot_correction(new, old), (old, new)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("My birthday is March 12.", "My wife's birthday is June 9."),  # no cue
        ("My birthday is March 12.", "Sorry, I was late today."),  # a cue, no value of that kind
        ("Our kitchen budget is 5000 euros.", "Sorry, the wedding budget is 15,000 euros."),  # another thing
        ("My budget is 5000.", "That is not 5000 dollars, it is my rent."),  # denied, but no other value given
    ],
)
def test_not_a_correction(old: str, new: str) -> None:
    assert not slot_correction(new, old), (old, new)


@pytest.mark.parametrize(
    ("old", "new", "changes"),
    [
        ("我每天晚上十一点睡。", "改成十点半睡了。", True),
        ("我的预算是5000。", "改到周四了。", False),  # a weekday does not change an amount
        ("The budget is 5000 euros.", "We moved it to Friday.", False),
    ],
)
def test_a_change_naming_no_thing_changes_a_value_of_its_kind(old: str, new: str, changes: bool) -> None:
    assert bool(slot_correction(new, old, changed=True)) is changes, (old, new)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("My phone is an iPhone 12.", "My phone is a Pixel 8."),
        ("I prefer aisle seats.", "I prefer window seats."),
        ("I take oat milk in my coffee.", "I take almond milk in my coffee."),
        ("My emergency contact is my brother Dev.", "My emergency contact is my partner, Leah."),
        ("My bike is a Trek road bike.", "My bike's a Specialized gravel bike."),
        ("我坐飞机喜欢靠过道。", "我坐飞机喜欢靠窗。"),
        ("我开的是大众朗逸。", "我开的是特斯拉Model 3。"),
        ("我住在成都。", "我现在住重庆。"),
        ("我在市场部。", "我在产品部。"),
    ],
)
def test_the_same_words_with_another_value_supersede(old: str, new: str) -> None:
    assert same_words_new_value(new, old), (old, new)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("The car is blue.", "The car is a manual."),  # another attribute: the shape of the value differs
        ("The wedding is on June 14.", "The wedding is at the Rosewood Inn."),
        ("Our new couch is gray.", "Our new couch is 84 inches long."),
        ("I have a cat.", "I have a dog."),  # possessions and likings add up
        ("I like dogs.", "I like cats."),
        ("I'm a teacher.", "I'm a mom."),  # a person is many things
        ("I take vitamin D every morning.", "I take fish oil every morning."),
        ("Room 101 has a broken lamp.", "Room 205 has a broken lamp."),  # which one, before the verb
        ("My budget is 5000.", "My sister's budget is 8000."),
        ("My work laptop is a MacBook Pro.", "My personal laptop is a ThinkPad."),
        ("I work at Deloitte.", "I work at Google too."),
        ("我是老师。", "我是妈妈。"),
        ("我家有一只猫。", "我家有一只狗。"),
        ("我喜欢猫。", "我喜欢狗。"),
        ("客厅的空调是格力。", "卧室的空调是美的。"),
        ("我在学吉他。", "我在学钢琴。"),  # two things learnt
        ("Caroline: That bowl is gorgeous!", "Caroline: That bowl is awesome, Mel!"),  # an opinion (LoCoMo)
    ],
)
def test_other_words_or_a_frame_that_adds_do_not(old: str, new: str) -> None:
    assert not same_words_new_value(new, old), (old, new)


def test_values_are_typed_and_normalised() -> None:
    assert slots("My rent's $1,350 a month.").values == {"money": frozenset({"1350"})}
    assert slots("I earn 55k.").values == {"number": frozenset({"55000"})}
    assert slots("降压药我一天吃两片。").values["qty:片"] == frozenset({"2"})
    assert slots("周会改到周四下午两点了。").values["weekday"] == frozenset({"thu"})
    assert slots("gym session on day 3").ids == frozenset({"day 3"})


@pytest.fixture
def core() -> Iterator[MemoryCore]:
    # its own collection: the in-process backend is shared by the cores of one process
    config = MemoryConfig(user_id="u", session_id="s", embedding_model="hash", collection=f"slots_{uuid.uuid4().hex}")
    c = MemoryCore(config)
    yield c
    c.close()


def superseded(core: MemoryCore, memory_id: str) -> bool:
    record = core.get(memory_id)
    assert record is not None  # kept as history either way
    return record.superseded_by is not None


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("我每天喝两升水。", "我一天喝三升水。"),  # no fact extracted from either message
        ("I drink coffee every morning.", "I've quit coffee completely, three weeks now."),
        ("My rent is $1,200.", "My rent's $1,350 a month."),
        ("I'm on the keto diet.", "Done with keto. Not doing it anymore."),  # its one fact lacks "keto"
        ("My salary is 62k.", "Just got a raise, salary went up to 70k."),  # "Just" is nobody's name
        ("My email is jordan.lee@gmail.com.", "My email is jordan@leehome.net, please use that one."),
        ("我儿子的钢琴课是周六上午。", "钢琴课调到周日下午三点了。"),  # names no one: the son's lesson
        ("我每天吃一片二甲双胍。", "医生把我的二甲双胍加到一天两片了。"),  # the thing is what 把 takes
        ("我妈叫刘玲。", "打错字了，是刘琳。"),  # a correction speaks of whom it corrects
        ("师傅上门是周二上午。", "哎我记错了，师傅上门应该是周二下午。"),
        ("Our son's bedtime is 8pm.", "We pushed his bedtime to 8:30 now that it's summer."),  # "his" points back
        ("Our bathroom remodel budget is €7,000.", "We scaled back the bathroom remodel budget to €5,500."),
        ("我早上七点起床。", "最近改成六点起了，要赶早班地铁。"),  # a change naming no thing: the nearest time
    ],
)
def test_through_the_core_the_old_value_is_no_longer_current(core: MemoryCore, old: str, new: str) -> None:
    first = core.add_message("user", old)
    result = core.add_message("user", new)
    assert result.event is WriteEvent.UPDATED, result
    assert result.reason.startswith(("update: rule", "delete: rule")), result.reason
    assert superseded(core, first.id)
    assert not superseded(core, result.id)
    assert old not in {h.text for h in core.recall(new, k=10)}


def test_a_long_chat_message_replaces_nothing_by_itself(core: MemoryCore) -> None:
    first = core.add_message("user", "Thanks! I'm going for my dreams!")
    long_message = (
        "Thanks, Gina! I won't quit. Your words motivate me to keep going. We put our hearts into this. "
        "I'm sure we'll make it, and I'm grateful you are here with me."
    )
    result = core.add_message("user", long_message)
    assert not result.superseded_ids
    assert not superseded(core, first.id)


def test_a_whole_message_replaces_the_nearest_restatement_only(core: MemoryCore) -> None:
    first = core.add_message("user", "房租每月2500。")
    second = core.add_message("user", "房租每月2600。")
    assert superseded(core, first.id)  # the second restated the first
    third = core.add_message("user", "房租一个月2700。")
    assert second.id in third.superseded_ids and first.id not in third.superseded_ids
    assert superseded(core, second.id) and not superseded(core, third.id)
