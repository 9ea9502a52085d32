"""Library settings by name, as the benchmarks' command lines and grids name them.

A ranking knob (``MemoryConfig.ranking``, a frozen ``RankingPolicy`` since 0.2)
is named plainly (``bm25_weight``) or as ``ranking.bm25_weight``; any other
name is a flat ``MemoryConfig`` field. Plain knob names are the tools'
spelling, not the deprecated flat setting, so nothing warns. The helpers also
work on a snapshot of memory-vec from before the policy (``recall_cv --code``),
whose knobs are flat fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["config_kwargs", "get_setting", "set_settings"]

_PREFIX = "ranking."


def _knob(config_type: type[Any], name: str) -> str | None:
    """The ranking knob ``name`` names on this config class, or None for a flat field."""
    fields = config_type.model_fields
    if "ranking" not in fields:  # a snapshot from before the policy: every knob is flat
        return None
    knobs = fields["ranking"].annotation.model_fields
    knob = name.removeprefix(_PREFIX)
    if knob in knobs:
        return knob
    if name.startswith(_PREFIX):
        raise ValueError(f"{name}: no such ranking knob; the knobs are {', '.join(knobs)}")
    return None


def config_kwargs(settings: Mapping[str, Any]) -> dict[str, Any]:
    """``settings`` as ``MemoryConfig(**...)`` takes them (the knobs in one ``ranking`` mapping)."""
    from memory_vec import MemoryConfig

    out: dict[str, Any] = {}
    ranking: dict[str, Any] = {}
    for name, value in settings.items():
        knob = _knob(MemoryConfig, name)
        if knob is None:
            out[name.removeprefix(_PREFIX)] = value
        else:
            ranking[knob] = value
    if ranking:
        out["ranking"] = {**out.get("ranking", {}), **ranking}
    return out


def get_setting(config: Any, name: str) -> Any:
    knob = _knob(type(config), name)
    return getattr(config, name.removeprefix(_PREFIX)) if knob is None else getattr(config.ranking, knob)


def set_settings(config: Any, settings: Mapping[str, Any]) -> None:
    """Set each named setting on a live config (validated); unchanged ones are left alone."""
    knobs: dict[str, Any] = {}
    for name, value in settings.items():
        knob = _knob(type(config), name)
        if knob is not None:
            knobs[knob] = value
        elif getattr(config, name.removeprefix(_PREFIX)) != value:
            setattr(config, name.removeprefix(_PREFIX), value)
    if any(getattr(config.ranking, knob) != value for knob, value in knobs.items()):
        config.ranking = config.ranking.with_overrides(**knobs)
