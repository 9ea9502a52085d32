"""Messy real chat: a seeded, deterministic rewrite of LoCoMo dialogues the
way people type in messaging apps (issue #17, point 3).

Each turn becomes a burst of short messages, every message keeping its
turn's ``dia_id`` (so a burst of an evidence turn counts as evidence):

* split: sentences, dashes and, in long sentences, commas start a new
  message; sometimes two short pieces stay together;
* a shared photo is its own message (``"📷 <caption>"``), as apps send it;
* abbreviations and chat spelling (``u``, ``bc``, ``tbh``, ``gonna``,
  ``pic``, ``fam``…), dropped apostrophes, lower case, no final period,
  stretched words (``sooo``);
* typos in longer words (swapped, dropped, doubled or neighbouring keys);
* emoji and fillers (``lol``, ``omg``, ``哈哈哈``), sometimes as a message of
  their own;
* English/Chinese code-switching: common words and phrases in Chinese
  (``真的``, ``上周``, ``露营``, ``老板``…) and Chinese particles, more for one
  speaker than the other.

The rates differ per speaker (a persona drawn from the seed). Randomness
comes from ``random.Random(f"{seed}:{sample_id}:{dia_id}")``, so one turn's
rewrite does not depend on any other turn's and a run is reproducible
anywhere. Nothing transformed is written to the repository: the harness
builds it from ``--data`` at run time (LoCoMo is CC BY-NC).

Preview: ``python -m benchmarks.recall_cv.messy_chat --data ../shared/data/locomo/locomo_dev.json --turns 12``
"""

from __future__ import annotations

import argparse
import json
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Persona", "messify_conversation", "messify_turn"]

ABBREVIATIONS: dict[str, tuple[str, ...]] = {
    "by the way": ("btw",),
    "to be honest": ("tbh",),
    "i don't know": ("idk",),
    "oh my god": ("omg",),
    "oh my gosh": ("omg",),
    "right now": ("rn",),
    "in my opinion": ("imo",),
    "as soon as possible": ("asap",),
    "you're": ("ur", "youre"),
    "your": ("ur",),
    "you": ("u", "u", "ya"),
    "are": ("r",),
    "because": ("bc", "cuz", "coz"),
    "thank you": ("ty", "thx", "thank u"),
    "thanks": ("thx", "thnx", "ty"),
    "please": ("pls", "plz"),
    "really": ("rly", "realy"),
    "tonight": ("tn", "2nite"),
    "tomorrow": ("tmrw", "tmr"),
    "people": ("ppl",),
    "something": ("smth", "sth"),
    "someone": ("some1",),
    "without": ("w/o",),
    "with": ("w", "w/"),
    "love": ("luv",),
    "okay": ("ok", "k", "okok"),
    "going to": ("gonna",),
    "want to": ("wanna",),
    "got to": ("gotta",),
    "probably": ("prob", "prolly"),
    "definitely": ("def", "defo"),
    "though": ("tho",),
    "about": ("abt",),
    "great": ("gr8",),
    "before": ("b4",),
    "see you": ("cya", "see ya"),
    "seriously": ("srsly",),
    "congratulations": ("congrats", "congratz"),
    "birthday": ("bday",),
    "family": ("fam",),
    "weekend": ("wknd", "weekend"),
    "picture": ("pic",),
    "photo": ("pic",),
    "favorite": ("fav", "fave"),
    "just": ("jus", "just"),
    "and": ("&", "n"),
    "yes": ("ya", "yep", "yea"),
    "yeah": ("ya", "yea", "yh"),
    "for": ("4", "for"),
    "what": ("wat", "wut"),
    "awesome": ("awsome", "awesome"),
    "amazing": ("amazin",),
    "nothing": ("nothin",),
    "talk to you later": ("ttyl",),
    "laughing": ("lol",),
}
CODE_SWITCH: dict[str, tuple[str, ...]] = {
    "really": ("真的",),
    "so tired": ("好累",),
    "haha": ("哈哈哈",),
    "thank you": ("谢谢",),
    "thanks": ("谢谢", "谢啦"),
    "work": ("工作",),
    "family": ("家人",),
    "kids": ("孩子们", "娃"),
    "friends": ("朋友们",),
    "tomorrow": ("明天",),
    "yesterday": ("昨天",),
    "last week": ("上周",),
    "next month": ("下个月",),
    "last month": ("上个月",),
    "last year": ("去年",),
    "weekend": ("周末",),
    "dinner": ("晚饭",),
    "happy": ("开心",),
    "awesome": ("太棒了",),
    "amazing": ("太厉害了",),
    "so cool": ("好酷",),
    "no way": ("不会吧",),
    "painting": ("画画",),
    "dance": ("跳舞",),
    "dancing": ("跳舞",),
    "camping": ("露营",),
    "hiking": ("徒步", "爬山"),
    "trip": ("旅行",),
    "beach": ("海边",),
    "class": ("课",),
    "mom": ("妈妈",),
    "dad": ("爸爸",),
    "husband": ("老公",),
    "wife": ("老婆",),
    "dog": ("狗狗",),
    "cat": ("猫咪",),
    "job": ("工作",),
    "boss": ("老板",),
    "money": ("钱",),
    "movie": ("电影",),
    "music": ("音乐",),
    "book": ("书",),
    "school": ("学校",),
    "car": ("车",),
    "busy": ("忙",),
    "good luck": ("加油",),
    "congrats": ("恭喜",),
    "birthday": ("生日",),
    "of course": ("当然",),
    "i think": ("我觉得",),
    "actually": ("其实",),
    "anyway": ("反正",),
    "so proud": ("好骄傲",),
    "volunteering": ("做志愿者",),
    "pottery": ("陶艺",),
    "store": ("店",),
    "studio": ("工作室",),
}
EMOJI = (
    "😂",
    "🤣",
    "😭",
    "🥹",
    "❤️",
    "😍",
    "🙏",
    "👍",
    "🔥",
    "✨",
    "🎉",
    "😅",
    "😊",
    "💪",
    "🙌",
    "😮",
    "🥲",
    "😎",
    "🤗",
)
FILLERS = (
    "lol",
    "omg",
    "haha",
    "hahaha",
    "lmao",
    "wait",
    "ok so",
    "!!",
    "😂",
    "哈哈哈",
    "对对",
    "嗯嗯",
    "yesss",
    "ikr",
)
PARTICLES = ("啦", "哈", "呀", "嘛", "呢", "哦")
NEIGHBOURS = dict(
    zip(
        "qwertyuiopasdfghjklzxcvbnm",
        (
            "wa",
            "qe",
            "wr",
            "et",
            "ry",
            "tu",
            "yi",
            "uo",
            "ip",
            "o",
            "qs",
            "ad",
            "sf",
            "dg",
            "fh",
            "gj",
            "hk",
            "jl",
            "k",
            "x",
            "zc",
            "xv",
            "cb",
            "vn",
            "bm",
            "n",
        ),
    )
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\s+[-–—]\s+")
_WORD = re.compile(r"[A-Za-z]{4,}")


@dataclass(frozen=True)
class Persona:
    """How one speaker types: each field is a probability."""

    typo: float  # per word of 4+ letters
    abbreviate: float  # per matching phrase
    code_switch: float  # per message: switch some words to Chinese
    emoji: float  # per message
    lower: float  # per message: all lower case
    filler: float  # per turn: an extra filler message

    @classmethod
    def draw(cls, rng: random.Random, *, bilingual: bool) -> Persona:
        return cls(
            typo=rng.uniform(0.03, 0.07),
            abbreviate=rng.uniform(0.4, 0.7),
            code_switch=rng.uniform(0.25, 0.4) if bilingual else rng.uniform(0.05, 0.12),
            emoji=rng.uniform(0.25, 0.45),
            lower=rng.uniform(0.6, 0.9),
            filler=rng.uniform(0.08, 0.18),
        )


def _replace_phrases(text: str, table: dict[str, tuple[str, ...]], p: float, rng: random.Random) -> str:
    # Longest phrases first, so "thank you" wins over "you".
    for phrase in sorted(table, key=len, reverse=True):
        pattern = re.compile(r"(?<![\w'])" + re.escape(phrase) + r"(?![\w'])", re.IGNORECASE)
        choices = table[phrase]
        text = pattern.sub(lambda m, c=choices: rng.choice(c) if rng.random() < p else m.group(0), text)
    return text


def _typo(word: str, rng: random.Random) -> str:
    i = rng.randrange(1, len(word) - 1)
    op = rng.random()
    if op < 0.3:
        return word[:i] + word[i + 1] + word[i] + word[i + 2 :]
    if op < 0.55:
        return word[:i] + word[i + 1 :]
    if op < 0.75:
        return word[:i] + word[i] + word[i:]
    near = NEIGHBOURS.get(word[i].lower())
    return word[:i] + rng.choice(near) + word[i + 1 :] if near else word


def _pieces(text: str, rng: random.Random) -> list[str]:
    parts: list[str] = []
    for sentence in _SENTENCE.split(text.strip()):
        if not sentence:
            continue
        if len(sentence.split()) > 12 and rng.random() < 0.6:
            parts.extend(s.strip() for s in sentence.split(", ") if s.strip())
        else:
            parts.append(sentence.strip())
    merged: list[str] = []
    for part in parts:  # two short pieces sometimes stay one message
        if merged and len(merged[-1].split()) + len(part.split()) <= 8 and rng.random() < 0.35:
            merged[-1] = f"{merged[-1]} {part}"
        else:
            merged.append(part)
    return merged


def _mess(message: str, persona: Persona, rng: random.Random) -> str:
    text = _replace_phrases(message, ABBREVIATIONS, persona.abbreviate, rng)
    if rng.random() < persona.code_switch:
        text = _replace_phrases(text, CODE_SWITCH, 0.6, rng)
        if rng.random() < 0.4:
            text = text.rstrip(".!? ") + rng.choice(PARTICLES)
    text = _WORD.sub(lambda m: _typo(m.group(0), rng) if rng.random() < persona.typo else m.group(0), text)
    if rng.random() < 0.5:
        text = text.replace("'", "").replace("’", "")
    if rng.random() < persona.lower:
        text = text.lower()
    if rng.random() < 0.8:
        text = text.rstrip(".")
    if rng.random() < 0.08:
        text = re.sub(
            r"\b(so|yes|no|omg|wow)\b", lambda m: m.group(1) + m.group(1)[-1] * rng.randint(2, 4), text, count=1
        )
    if rng.random() < persona.emoji:
        text = f"{text} {''.join(rng.choice(EMOJI) for _ in range(rng.randint(1, 2)))}".strip()
    return text


def messify_turn(turn: dict[str, Any], persona: Persona, rng: random.Random) -> list[str]:
    """The messages one turn becomes, in order."""
    messages = [_mess(piece, persona, rng) for piece in _pieces(turn["text"], rng)]
    messages = [m for m in messages if m.strip()] or [turn["text"]]
    if turn.get("blip_caption"):
        at = rng.choice((0, len(messages)))
        messages.insert(at, f"📷 {turn['blip_caption']}")
    if rng.random() < persona.filler:
        messages.insert(rng.choice((0, len(messages))), rng.choice(FILLERS))
    return messages


def messify_conversation(conv: dict[str, Any], seed: int = 0) -> dict[str, Any]:
    """A LoCoMo conversation dict whose sessions hold the messy messages.

    Each message is ``{"speaker", "dia_id", "text", "burst"}`` (``burst`` =
    position within its turn); dates, speakers and ``qa`` are unchanged.
    """
    c = conv["conversation"]
    speakers = [c["speaker_a"], c["speaker_b"]]
    sid = conv["sample_id"]
    personas = {
        name: Persona.draw(random.Random(f"{seed}:{sid}:persona:{name}"), bilingual=i == 1)
        for i, name in enumerate(speakers)
    }
    out: dict[str, Any] = {k: v for k, v in c.items() if not k.startswith("session_") or k.endswith("date_time")}
    n = 1
    while f"session_{n}" in c:
        messages = []
        for turn in c[f"session_{n}"]:
            rng = random.Random(f"{seed}:{sid}:{turn['dia_id']}")
            persona = personas.get(turn["speaker"], personas[speakers[0]])
            for j, text in enumerate(messify_turn(turn, persona, rng)):
                messages.append({"speaker": turn["speaker"], "dia_id": turn["dia_id"], "text": text, "burst": j})
        out[f"session_{n}"] = messages
        n += 1
    return {**conv, "conversation": out}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Print the messy rewrite of the first turns of each conversation.")
    parser.add_argument("--data", default="../shared/data/locomo/locomo_dev.json")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--turns", type=int, default=10, help="turns of session 1 to show per conversation")
    args = parser.parse_args(argv)
    for conv in json.loads(Path(args.data).read_text(encoding="utf-8")):
        messy = messify_conversation(conv, args.seed)["conversation"]["session_1"]
        wanted = {t["dia_id"] for t in conv["conversation"]["session_1"][: args.turns]}
        print(f"## {conv['sample_id']}")
        for m in messy:
            if m["dia_id"] in wanted:
                print(f"{m['dia_id']:>6} {m['speaker']}: {m['text']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
