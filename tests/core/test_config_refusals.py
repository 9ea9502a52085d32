"""The config refuses mistakes instead of ignoring them (issue #44, point 8):
unknown MEMORY_VEC_* variables and settings (with a "did you mean"), bad values
in mapping fields, YAML syntax errors and unknown embedding models."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from memory_vec import ConfigError, EmbeddingError, MemoryConfig, RankingPolicy

REPO = Path(__file__).resolve().parents[2]


def test_an_unknown_environment_variable_is_refused_with_a_suggestion() -> None:
    with pytest.raises(ConfigError) as err:
        MemoryConfig.from_env({"MEMORY_VEC_BACKNED": "chroma"})
    msg = str(err.value)
    assert "MEMORY_VEC_BACKNED" in msg and "did you mean MEMORY_VEC_BACKEND?" in msg
    with pytest.raises(ConfigError, match="MEMORY_VEC_NOTHING_LIKE_IT"):
        MemoryConfig.from_env({"MEMORY_VEC_NOTHING_LIKE_IT": "1"})
    # Variables outside the prefix are none of ours.
    assert MemoryConfig.from_env({"MEMVEC_TEST_REQUIRE_SERVICES": "1", "PATH": "/bin"}).backend == "memory"


def test_every_memory_vec_variable_the_repository_uses_is_a_setting() -> None:
    """The scripts', tests' and benchmarks' own variables live outside the prefix,
    so running them never trips the refusal above."""
    known = {"MEMORY_VEC_" + name.upper() for name in MemoryConfig.model_fields if name != "ranking"}
    known |= {"MEMORY_VEC_RANKING__" + knob.upper() for knob in RankingPolicy.model_fields}
    used: set[str] = set()
    for folder in ("scripts", "tests", ".ci", "benchmarks", "notebooks", "docs"):
        for path in (REPO / folder).rglob("*"):
            if path.is_file() and path.suffix in {"", ".py", ".sh", ".md", ".ipynb", ".yaml", ".yml", ".toml"}:
                used |= set(re.findall(r"MEMORY_VEC_[A-Z0-9_]*[A-Z0-9]", path.read_text("utf-8", "replace")))
    used -= {"MEMORY_VEC_BACKNED", "MEMORY_VEC_NOTHING_LIKE_IT", "MEMORY_VEC_TTL_DAYS_BY_KINDS"}  # this file's
    # tests/core/test_ranking_policy.py's: misspelt, no knob, and the 0.1 name (accepted until 0.3)
    used -= {"MEMORY_VEC_RANKING__BM25_WEIGT", "MEMORY_VEC_BM25_WEIGT", "MEMORY_VEC_RANKING__TOP_K"}
    used -= {"MEMORY_VEC_RANKING", "MEMORY_VEC_BM25_WEIGHT"}
    assert used - known == set()


def test_an_unknown_setting_says_did_you_mean() -> None:
    with pytest.raises(ConfigError, match=r"did you mean 'max_token_limit'\?"):
        MemoryConfig(max_tokens_limit=10)
    with pytest.raises(ConfigError, match="did you mean MEMORY_VEC_TTL_DAYS_BY_KIND\\?"):
        MemoryConfig.from_env({"MEMORY_VEC_TTL_DAYS_BY_KINDS": "{}"})


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ({"message": -1}, "greater than 0"),
        ({"message": 0}, "greater than 0"),
        ({"message": math.nan}, "finite"),
        ({"fact": math.inf}, "finite"),
        ({"messages": 30}, "unknown kind 'messages'"),
        ({"message": True}, "number"),
    ],
)
def test_bad_values_in_ttl_days_by_kind_are_refused(value: dict[str, object], why: str) -> None:
    with pytest.raises(ConfigError) as err:
        MemoryConfig(ttl_days_by_kind=value)
    msg = str(err.value)
    assert "ttl_days_by_kind" in msg and why in msg
    assert MemoryConfig(ttl_days_by_kind={"message": 365, "fact": 0.5}).ttl_days_by_kind == {
        "message": 365,
        "fact": 0.5,
    }


def test_ttl_days_by_kind_from_the_environment_is_json() -> None:
    c = MemoryConfig.from_env({"MEMORY_VEC_TTL_DAYS_BY_KIND": '{"message": 30}'})
    assert c.ttl_days_by_kind == {"message": 30}
    with pytest.raises(ConfigError, match="MEMORY_VEC_TTL_DAYS_BY_KIND"):
        MemoryConfig.from_env({"MEMORY_VEC_TTL_DAYS_BY_KIND": "message=30"})
    with pytest.raises(ConfigError, match="ttl_days_by_kind"):
        MemoryConfig.from_env({"MEMORY_VEC_TTL_DAYS_BY_KIND": '{"message": -1}'})


def test_a_yaml_syntax_error_is_a_config_error(tmp_path: Path) -> None:
    import yaml

    path = tmp_path / "memory.yaml"
    path.write_text("user_id: bob\nbackend: [chroma\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"memory\.yaml") as err:
        MemoryConfig.from_yaml(path)
    assert isinstance(err.value.__cause__, yaml.YAMLError)


@pytest.mark.slow  # imports sentence-transformers (torch): seconds, in the model tier where it is loaded anyway
def test_an_unknown_embedding_model_is_a_config_error_naming_the_setting() -> None:
    pytest.importorskip("sentence_transformers")
    from memory_vec.embeddings import get_embedder

    with pytest.raises(ConfigError) as err:
        get_embedder("no-such-org/no-such-model-xyz")
    msg = str(err.value)
    assert "embedding_model" in msg and "no-such-org/no-such-model-xyz" in msg and "download" in msg
    assert isinstance(err.value, EmbeddingError)
    assert isinstance(err.value.__cause__, OSError)
