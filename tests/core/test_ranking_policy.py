"""The ranking knobs tuned on the development sets are one frozen policy,
``MemoryConfig.ranking`` (issue #45, point 6): their defaults are the ones
measured, their 0.1 flat spellings work until 0.3 with a warning naming the
new one, and a misspelt knob is refused by name in every form."""

from __future__ import annotations

import importlib
import sys
import warnings
from pathlib import Path

import pytest

from memory_vec import ConfigError, MemoryConfig, RankingPolicy

# The flat defaults of memory-vec before the policy (main at a663651): recall stays identical.
DEFAULTS_BEFORE = {
    "bm25_weight": 0.3,
    "bm25_context_weight": 0.5,
    "candidate_pool": 200,
    "candidate_multiplier": 4,
    "speaker_boost": 0.0,
    "date_window_boost": 0.03,
    "split_order_questions": True,
    "keyword_feedback": 10,
    "keyword_feedback_weight": 0.2,
    "keyword_feedback_min_docs": 2,
}


def test_the_policy_holds_the_knobs_with_their_measured_defaults() -> None:
    assert RankingPolicy().model_dump() == DEFAULTS_BEFORE
    assert MemoryConfig().ranking == RankingPolicy()
    assert not set(DEFAULTS_BEFORE) & set(MemoryConfig.model_fields)  # one place each, not two
    # The settings users set stay where they were.
    assert {"recall_k", "score_threshold", "hybrid", "neighbor_window", "recency_weight"} <= set(
        MemoryConfig.model_fields
    )
    assert all(field.description for field in RankingPolicy.model_fields.values())


def test_a_knob_is_set_in_ranking_and_the_policy_is_frozen() -> None:
    config = MemoryConfig(ranking={"bm25_weight": 0.45, "speaker_boost": 0.05})
    assert (config.ranking.bm25_weight, config.ranking.speaker_boost) == (0.45, 0.05)
    assert config.ranking.candidate_pool == 200
    with pytest.raises(ConfigError, match="frozen"):
        config.ranking.bm25_weight = 0.1  # type: ignore[misc]
    config.ranking = config.ranking.with_overrides(bm25_weight=0.1)
    assert (config.ranking.bm25_weight, config.ranking.speaker_boost) == (0.1, 0.05)
    assert MemoryConfig(ranking=RankingPolicy(keyword_feedback=0)).ranking.keyword_feedback == 0


def test_with_overrides_changes_only_the_knobs_it_names() -> None:
    config = MemoryConfig(user_id="ann", ranking={"speaker_boost": 0.05})
    changed = config.with_overrides(ranking={"bm25_weight": 0.6})
    assert (changed.ranking.bm25_weight, changed.ranking.speaker_boost, changed.user_id) == (0.6, 0.05, "ann")
    assert config.with_overrides(user_id="bob").ranking == config.ranking


@pytest.mark.parametrize(
    ("given", "named", "hint"),
    [
        ({"ranking": {"bm25_weigth": 0.3}}, "MemoryConfig.ranking.bm25_weigth", "did you mean 'bm25_weight'?"),
        ({"ranking": {"top_k": 5}}, "MemoryConfig.ranking.top_k", "unknown setting"),
        ({"bm25_weigth": 0.3}, "MemoryConfig.bm25_weigth", "did you mean 'ranking.bm25_weight'?"),
        ({"ranking": {"bm25_weight": 2}}, "MemoryConfig.ranking.bm25_weight: got 2", "less than or equal to 1"),
        ({"ranking": "bm25"}, "MemoryConfig.ranking: got 'bm25'", "RankingPolicy"),
    ],
)
def test_a_bad_knob_is_a_config_error_naming_it(given: dict[str, object], named: str, hint: str) -> None:
    with pytest.raises(ConfigError) as err:
        MemoryConfig(**given)
    assert named in str(err.value) and hint in str(err.value)


def test_the_policy_refuses_an_unknown_knob_on_its_own() -> None:
    with pytest.raises(ConfigError, match=r"RankingPolicy\.candidate_pol: .*did you mean 'candidate_pool'\?"):
        RankingPolicy(candidate_pol=100)
    with pytest.raises(ConfigError, match=r"RankingPolicy\.keyword_feedback: got -1"):
        RankingPolicy().with_overrides(keyword_feedback=-1)


# ---------------------------------------------------------------- the 0.1 spellings, until 0.3
def test_a_flat_knob_warns_naming_the_new_spelling_and_takes_effect() -> None:
    with pytest.warns(DeprecationWarning, match=r"MemoryConfig\.bm25_weight .*ranking=\{'bm25_weight': 0\.45\}"):
        config = MemoryConfig(bm25_weight=0.45, user_id="ann")
    assert config.ranking.bm25_weight == 0.45 and config.user_id == "ann"
    assert config.ranking == RankingPolicy(bm25_weight=0.45)
    with pytest.warns(DeprecationWarning, match=r"config\.ranking\.with_overrides\(speaker_boost=\.\.\.\)"):
        config.speaker_boost = 0.2  # type: ignore[attr-defined]
    assert config.ranking.speaker_boost == 0.2 and config.ranking.bm25_weight == 0.45
    with pytest.warns(DeprecationWarning, match=r"config\.ranking\.speaker_boost"):
        assert config.speaker_boost == 0.2  # type: ignore[attr-defined]
    with pytest.warns(DeprecationWarning), pytest.raises(ConfigError, match="speaker_boost"):
        config.speaker_boost = 5  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        config.no_such_setting  # type: ignore[attr-defined]  # noqa: B018


def test_a_flat_knob_changes_what_recall_ranks_like_the_new_spelling(make_core) -> None:  # type: ignore[no-untyped-def]
    def scores(core) -> list[tuple[str, float]]:  # type: ignore[no-untyped-def]
        core.add_messages([("user", "The booking code is ZQ7781"), ("user", "We booked the hotel by the lake")])
        return [(h.text, round(h.score, 6)) for h in core.recall("booking code ZQ7781", k=2)]

    with pytest.warns(DeprecationWarning, match="bm25_weight"):
        old = scores(make_core(bm25_weight=0.9, neighbor_window=0))
    new = scores(make_core(ranking={"bm25_weight": 0.9}, neighbor_window=0))
    default = scores(make_core(neighbor_window=0))
    assert old == new != default


def test_a_knob_given_both_flat_and_nested_is_refused() -> None:
    with pytest.raises(ConfigError, match="bm25_weight given both flat and in ranking"):
        MemoryConfig(bm25_weight=0.2, ranking={"bm25_weight": 0.3})
    with pytest.raises(ConfigError, match="ranking must be a mapping"):
        MemoryConfig(bm25_weight=0.2, ranking="x")


def test_a_dict_or_yaml_file_takes_the_nested_mapping_and_the_flat_keys(tmp_path: Path) -> None:
    path = tmp_path / "memory.yaml"
    path.write_text("user_id: ann\nranking:\n  bm25_weight: 0.4\n  keyword_feedback: 0\n", encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        config = MemoryConfig.from_yaml(path)
    assert (config.ranking.bm25_weight, config.ranking.keyword_feedback, config.user_id) == (0.4, 0, "ann")
    path.write_text("user_id: ann\nbm25_weight: 0.4\n", encoding="utf-8")
    with pytest.warns(DeprecationWarning, match="ranking="):
        assert MemoryConfig.from_yaml(path).ranking.bm25_weight == 0.4
    with pytest.warns(DeprecationWarning, match="candidate_pool"):
        assert MemoryConfig.from_dict({"candidate_pool": 50}).ranking.candidate_pool == 50
    path.write_text("ranking:\n  bm25_weigt: 0.4\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"ranking\.bm25_weigt.*did you mean 'bm25_weight'"):
        MemoryConfig.from_yaml(path)


# ---------------------------------------------------------------- environment variables
def test_a_knob_from_the_environment_is_nested_under_ranking() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        config = MemoryConfig.from_env(
            {"MEMORY_VEC_RANKING__BM25_WEIGHT": "0.4", "MEMORY_VEC_RANKING__SPLIT_ORDER_QUESTIONS": "false"}
        )
    assert (config.ranking.bm25_weight, config.ranking.split_order_questions) == (0.4, False)
    # A keyword override wins, and changes only the knob it names.
    config = MemoryConfig.from_env({"MEMORY_VEC_RANKING__BM25_WEIGHT": "0.4"}, ranking={"speaker_boost": 0.1})
    assert (config.ranking.bm25_weight, config.ranking.speaker_boost) == (0.4, 0.1)
    with pytest.raises(ConfigError, match=r"MEMORY_VEC_RANKING__BM25_WEIGHT: got '1\.5'|ranking\.bm25_weight"):
        MemoryConfig.from_env({"MEMORY_VEC_RANKING__BM25_WEIGHT": "1.5"})


def test_the_0_1_environment_variable_warns_naming_the_new_one() -> None:
    with pytest.warns(DeprecationWarning, match="MEMORY_VEC_BM25_WEIGHT is MEMORY_VEC_RANKING__BM25_WEIGHT"):
        config = MemoryConfig.from_env({"MEMORY_VEC_BM25_WEIGHT": "0.4"})
    assert config.ranking.bm25_weight == 0.4
    with pytest.raises(ConfigError, match="keep MEMORY_VEC_RANKING__BM25_WEIGHT only"):
        MemoryConfig.from_env({"MEMORY_VEC_BM25_WEIGHT": "0.4", "MEMORY_VEC_RANKING__BM25_WEIGHT": "0.5"})


def test_an_unknown_ranking_variable_is_refused_with_the_nested_suggestion() -> None:
    with pytest.raises(ConfigError) as err:
        MemoryConfig.from_env({"MEMORY_VEC_RANKING__BM25_WEIGT": "0.4", "MEMORY_VEC_BM25_WEIGT": "0.4"})
    msg = str(err.value)
    assert "MEMORY_VEC_RANKING__BM25_WEIGT (did you mean MEMORY_VEC_RANKING__BM25_WEIGHT?)" in msg
    assert "MEMORY_VEC_BM25_WEIGT (did you mean MEMORY_VEC_RANKING__BM25_WEIGHT?)" in msg
    for name in ("MEMORY_VEC_RANKING__TOP_K", "MEMORY_VEC_RANKING"):  # no knob; the policy is not JSON
        with pytest.raises(ConfigError, match=name):
            MemoryConfig.from_env({name: "5"})


# ---------------------------------------------------------------- the 0.1 import path
def test_the_0_1_ranking_policy_name_still_imports_with_a_warning() -> None:
    from memory_vec._rules.ranking import ScorePolicy

    sys.modules.pop("memory_vec.recall", None)
    with pytest.warns(DeprecationWarning, match="memory_vec.recall moved"):
        old_package = importlib.import_module("memory_vec.recall")
    with pytest.warns(DeprecationWarning, match="memory_vec.recall.RankingPolicy is .*ScorePolicy"):
        assert old_package.RankingPolicy is ScorePolicy
    with pytest.raises(AttributeError):
        old_package.NoSuchName  # noqa: B018


# ---------------------------------------------------------------- the tools that set knobs by name
def test_the_benchmarks_set_a_knob_by_its_plain_or_nested_name() -> None:
    """``recall_cv --grid bm25_weight=0.2,0.3`` and ``--grid ranking.bm25_weight=...`` both work, unwarned."""
    from benchmarks.settings_by_name import config_kwargs, get_setting, set_settings

    given = {"bm25_weight": 0.2, "ranking.speaker_boost": 0.05, "hybrid": False}
    assert config_kwargs(given) == {"hybrid": False, "ranking": {"bm25_weight": 0.2, "speaker_boost": 0.05}}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        config = MemoryConfig(**config_kwargs(given))
        set_settings(config, {"bm25_weight": 0.6, "ranking.candidate_pool": 100, "recall_k": 7})
        assert get_setting(config, "bm25_weight") == get_setting(config, "ranking.bm25_weight") == 0.6
        assert (config.ranking.candidate_pool, config.ranking.speaker_boost, config.recall_k) == (100, 0.05, 7)
        assert config.hybrid is False
    with pytest.raises(ValueError, match=r"ranking\.bm25_weigth: no such ranking knob"):
        config_kwargs({"ranking.bm25_weigth": 0.2})
    with pytest.raises(ConfigError, match="bm25_weight"):
        set_settings(config, {"bm25_weight": 3})
