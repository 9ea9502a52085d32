"""MkDocs hook: the settings and CLI reference pages are generated from the code.

A page holding ``<!-- generated: settings -->`` gets one line per ``MemoryConfig``
field and per knob of its ``ranking`` policy (``ranking.bm25_weight``; the first
sentence of its description; the guides have the details), and
``<!-- generated: cli -->`` the help of every ``memory-vec`` command, so neither
can drift from what the code accepts.
"""

from __future__ import annotations

import argparse
import re
from typing import Any

_FIRST_SENTENCE = re.compile(r"^(.+?[.!?])(?:\s|$)", re.S)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _first_sentence(text: str) -> str:
    """The first sentence, or the first two when the first is only a label ("Working-state store.")."""
    text = " ".join(text.split())
    match = _FIRST_SENTENCE.match(text)
    if not match:
        return text
    if len(match.group(1)) < 40:
        second = _FIRST_SENTENCE.match(text[match.end() :])
        return f"{match.group(1)} {second.group(1)}" if second else text
    return match.group(1)


def _settings() -> dict[str, tuple[Any, str]]:
    """Every setting by the name it is written with (a ranking knob as ``ranking.<knob>``):
    its field and its environment variable."""
    from memory_vec import MemoryConfig, RankingPolicy
    from memory_vec._model.config import _JSON_FIELDS, ENV_PREFIX

    out: dict[str, tuple[Any, str]] = {}
    for name, field in MemoryConfig.model_fields.items():
        if name == "ranking":  # the policy's knobs, each in its own row
            for knob, knob_field in RankingPolicy.model_fields.items():
                out[f"ranking.{knob}"] = (knob_field, f"`{ENV_PREFIX}RANKING__{knob.upper()}`")
            continue
        out[name] = (field, f"`{ENV_PREFIX}{name.upper()}`" + (" (JSON)" if name in _JSON_FIELDS else ""))
    return out


def settings_table() -> str:
    rows = ["| setting | default | environment variable | what it does |", "|---|---|---|---|"]
    for name, (field, env) in _settings().items():
        described = _first_sentence(field.description or "")
        rows.append(f"| `{name}` | `{field.get_default(call_default_factory=True)!r}` | {env} | {_cell(described)} |")
    return "\n".join(rows)


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:  # argparse keeps its subparsers here only
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def cli_reference() -> str:
    from memory_vec._cli.main import build_parser

    parser = build_parser()
    parts = []
    for name, sub in _subcommands(parser).items():
        sub.prog = f"memory-vec {name}"
        parts.append(f"### `memory-vec {name}`\n\n```text\n{sub.format_help().rstrip()}\n```")
    return "\n\n".join(parts)


def settings_details(names: list[str]) -> str:
    """The whole description of each named setting (``ranking.<knob>`` for a ranking knob),
    for the guide that explains them."""
    settings = _settings()
    unknown = [name for name in names if name not in settings]
    if unknown:
        raise ValueError(f"settings-details names unknown settings: {unknown}")
    return "\n".join(
        f"- **`{name}`** (`{settings[name][0].get_default(call_default_factory=True)!r}`): "
        f"{' '.join((settings[name][0].description or '').split())}"
        for name in names
    )


_GENERATED = {"settings": settings_table, "cli": cli_reference}
_DETAILS = re.compile(r"<!-- generated: settings-details ([\w ,.]+) -->")


def on_page_markdown(markdown: str, **_: Any) -> str:
    for key, make in _GENERATED.items():
        marker = f"<!-- generated: {key} -->"
        if marker in markdown:
            markdown = markdown.replace(marker, make())
    return _DETAILS.sub(lambda m: settings_details(re.split(r"[\s,]+", m.group(1).strip())), markdown)
