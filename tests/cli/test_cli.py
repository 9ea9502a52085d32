"""The ``memory-vec`` CLI, run in-process on an in-process store with the
hashing embedder. The memory backend lives per process, so every flow that
spans commands runs in this one process on one tmp persist_dir."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memory_vec import MemoryConfig, MemoryCore
from memory_vec._cli.main import main
from memory_vec.testing import parts


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    data = json.loads(out.out) if "--json" in argv and out.out.strip() else out.out
    return code, data, out.err


def test_stats_list_search_show(core: MemoryCore, config_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    core.add_messages([("user", "Our travel budget is 5000 euros."), ("assistant", "Noted, 5000 euros.")])
    core.add_messages([("user", "My dog is called Biscuit."), ("assistant", "Lovely name.")], session_id="s2")
    cfg = ["--config", str(config_file)]

    code, stats, _ = run(capsys, "stats", *cfg, "--json")
    total = parts(core).backend.count(_all("alice"))  # messages and the facts extracted from them
    assert code == 0 and stats["records"] == total and stats["by_kind"]["message"] == 4
    assert stats["users"] == 1 and stats["sessions"] == 2
    code, text, _ = run(capsys, "stats", *cfg)
    assert code == 0 and f"records: {total}" in text

    code, listed, _ = run(capsys, "list", *cfg, "--json", "--session", "s2", "--kind", "message")
    assert code == 0 and listed["total"] == 2
    assert {r["text"] for r in listed["records"]} == {"My dog is called Biscuit.", "Lovely name."}
    code, listed, _ = run(capsys, "list", *cfg, "--json", "--limit", "1", "--kind", "message")
    assert code == 0 and listed["shown"] == 1 and listed["total"] == 4
    code, listed, _ = run(capsys, "list", *cfg, "--json", "--user", "nobody")
    assert code == 1 and listed["total"] == 0

    code, found, _ = run(capsys, "search", "travel budget euros", *cfg, "--json", "--k", "2")
    assert code == 0 and found["user_id"] == "alice"
    assert found["hits"][0]["text"] == "Our travel budget is 5000 euros."
    assert len(found["hits"]) <= 2
    code, found, _ = run(capsys, "search", "dog Biscuit", *cfg, "--json", "--scope", "session")
    assert code in (0, 1) and all(h["session_id"] == "s1" for h in found["hits"])

    memory_id = found["hits"][0]["id"] if found["hits"] else listed_id(core)
    code, shown, _ = run(capsys, "show", memory_id, *cfg, "--json")
    assert code == 0 and shown["record"]["id"] == memory_id and shown["history"][-1]["id"] == memory_id
    code, text, _ = run(capsys, "show", memory_id, *cfg)
    assert code == 0 and "history (oldest first)" in text


def listed_id(core: MemoryCore) -> str:
    return core.working_state().messages[0].id


def test_show_lists_supersede_history(core: MemoryCore, config_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = core.remember("The travel budget is 5000 euros.")
    new = core.remember("The travel budget is 8000 euros.")
    assert old.id in new.superseded_ids
    code, shown, _ = run(capsys, "show", old.id, "--config", str(config_file), "--json")
    assert code == 0
    assert [r["id"] for r in shown["history"]] == [old.id, new.id]
    assert shown["record"]["superseded_by"] == new.id


def test_not_found_and_bad_input_exit_codes(config_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err, _ = run(capsys, "show", "does-not-exist", "--config", str(config_file), "--json")
    assert code == 1 and err["error"] == "MemoryNotFoundError"
    code, _, err_text = run(capsys, "show", "does-not-exist", "--config", str(config_file))
    assert code == 1 and "MemoryNotFoundError" in err_text and "Traceback" not in err_text

    code, _, err_text = run(capsys, "stats", "--config", str(config_file.with_name("missing.yaml")))
    assert code == 2 and "ConfigError" in err_text and "missing.yaml" in err_text
    bad = config_file.with_name("bad.yaml")
    bad.write_text("backend: memory\nmax_token_limit: -5\n", encoding="utf-8")
    code, err, _ = run(capsys, "stats", "--config", str(bad), "--json")
    assert code == 2 and err["error"] == "ConfigError" and "max_token_limit" in err["message"]

    code, _, err_text = run(capsys, "forget", "--config", str(config_file))
    assert code == 2 and "--user" in err_text
    code, _, _ = run(capsys, "search", "x", "--config", str(config_file), "--k", "0")
    assert code == 2
    code, _, _ = run(capsys, "list", "--config", str(config_file), "--limit", "0")
    assert code == 2
    code, _, _ = run(capsys, "list", "--no-such-option")  # argparse usage error
    assert code == 2


def test_backend_unavailable_exit_code(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Nothing listens on port 9: the backend cannot be reached.
    code, err, _ = run(
        capsys, "stats", "--backend", "chroma", "--url", "http://127.0.0.1:9", "--persist-dir", str(tmp_path), "--json"
    )
    assert code == 3, err


def test_env_config_and_overrides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEMORY_VEC_BACKEND", "memory")
    monkeypatch.setenv("MEMORY_VEC_EMBEDDING_MODEL", "hash:64")
    monkeypatch.setenv("MEMORY_VEC_PERSIST_DIR", str(tmp_path / "env-store"))
    core = MemoryCore(
        MemoryConfig(
            backend="memory", embedding_model="hash:64", persist_dir=str(tmp_path / "env-store"), user_id="bob"
        )
    )
    core.add_message("user", "hello there")  # no fact in it: one record
    code, stats, _ = run(capsys, "stats", "--json")
    assert code == 0 and stats["records"] == 1
    code, stats, _ = run(capsys, "stats", "--json", "--collection", "other")
    assert code == 0 and stats["records"] == 0 and stats["collection"] == "other"


def test_forget_prints_receipt(core: MemoryCore, config_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    core.add_messages([("user", "I like tea."), ("assistant", "Tea it is.")])
    core.add_message("user", "Other session.", session_id="s2")
    cfg = ["--config", str(config_file)]
    code, receipt, _ = run(capsys, "forget", *cfg, "--user", "alice", "--session", "s2", "--json", "--yes")
    assert code == 0 and receipt["records_deleted"] == 1 and receipt["remaining_after_scan"] == 0
    left = parts(core).backend.count(_all("alice"))
    assert left >= 2
    code, text, _ = run(capsys, "forget", *cfg, "--user", "alice", "--yes")
    assert code == 0 and f"records_deleted: {left}" in text and "remaining_after_scan: 0" in text
    code, receipt, _ = run(capsys, "forget", *cfg, "--user", "alice", "--json", "--yes")
    assert code == 1 and receipt["records_deleted"] == 0


def test_export_then_import_round_trip(
    core: MemoryCore, config_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    core.add_messages([("user", "我对花生过敏。"), ("assistant", "记住了。")])
    before = sorted((r.id, r.text) for r in parts(core).backend.scan(_all("alice")))
    cfg = ["--config", str(config_file)]
    out = tmp_path / "alice.json"
    code, summary, _ = run(capsys, "export", str(out), *cfg, "--user", "alice", "--json")
    assert code == 0 and summary["records"] == len(before) and out.exists()
    assert "我对花生过敏" in out.read_text(encoding="utf-8")
    run(capsys, "forget", *cfg, "--user", "alice", "--yes")
    assert parts(core).backend.count(_all("alice")) == 0
    code, result, _ = run(capsys, "import", str(out), *cfg, "--json")
    assert code == 0 and result["imported"] == len(before)
    assert sorted((r.id, r.text) for r in parts(core).backend.scan(_all("alice"))) == before

    code, summary, _ = run(capsys, "export", str(tmp_path / "none.json"), *cfg, "--user", "nobody", "--json")
    assert code == 1 and not (tmp_path / "none.json").exists()
    code, _, err = run(capsys, "import", str(tmp_path / "missing.json"), *cfg)
    assert code == 2 and "missing.json" in err
    (tmp_path / "junk.json").write_text('{"format": "other"}', encoding="utf-8")
    code, _, err = run(capsys, "import", str(tmp_path / "junk.json"), *cfg)
    assert code == 2 and "InvalidInputError" in err


def _all(user: str) -> Any:
    from memory_vec.backends import RecordFilter

    return RecordFilter(user_id=user, include_superseded=True, include_archived=True)


def test_reembed(core: MemoryCore, config_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    core.add_messages([("user", "The budget is 5000."), ("assistant", "Noted.")])
    n = parts(core).backend.count(_all("alice"))
    code, result, _ = run(capsys, "reembed", "--model", "hash:32", "--config", str(config_file), "--json")
    assert code == 0 and result == {"records": n, "model_id": "hash-32", "dimension": 32}
    assert parts(core).backend.count(_all("alice")) == n


def test_compact_merges_duplicate_facts(
    core: MemoryCore, config_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from memory_vec._model.records import MemoryRecord

    a = core.remember("I prefer window seats.", importance=0.9)
    # Duplicates written directly (the conflict check would refuse them):
    # same text up to case and punctuation, from other sessions.
    vec = parts(core).embedder.embed_documents(["i prefer window seats"])
    dups = [
        MemoryRecord(
            id=f"dup{i}",
            text=t,
            role="user",
            user_id="alice",
            session_id=f"s{i}",
            timestamp=1_700_000_000.0 + i,
            kind="fact",
            importance=0.5,
            source_ids=[f"m{i}"],
        )
        for i, t in enumerate(["i prefer WINDOW seats", "I prefer window seats!!"])
    ]
    parts(core).backend.upsert(dups, vec.repeat(2, axis=0))
    cfg = ["--config", str(config_file)]

    code, plan, _ = run(capsys, "compact", *cfg, "--user", "alice", "--dry-run", "--json")
    assert code == 0 and plan["merged"] == 2 and parts(core).backend.get(["dup0"])[0].valid_to is None
    code, report, _ = run(capsys, "compact", *cfg, "--json")
    assert code == 0 and report["merged"] == 2
    [merge] = report["merges"]
    assert merge["survivor"] == a.id and sorted(merge["merged"]) == ["dup0", "dup1"]
    survivor = core.get(a.id)
    assert {"m0", "m1", "dup0", "dup1"} <= set(survivor.source_ids)  # provenance
    for old in parts(core).backend.get(["dup0", "dup1"]):
        assert old.superseded_by == a.id and old.valid_to is not None
        assert "merged_into" not in old.metadata  # the caller's metadata is untouched
    assert [h.id for h in core.recall("window seats", k=5) if h.kind == "fact"] == [a.id]
    code, report, _ = run(capsys, "compact", *cfg, "--json")
    assert code == 0 and report["merged"] == 0


@pytest.mark.slow
def test_demo_subprocess(tmp_path: Path) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    store = tmp_path / "demo-store"
    proc = subprocess.run(
        [sys.executable, "-m", "memory_vec", "demo", "--turns", "30", "--every", "10", "--persist-dir", str(store)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        cwd=tmp_path,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "summary" in out and "recent" in out and "relevant" in out
    assert "saved     1 - memory / full" in out  # the legend
    rows = [line.split() for line in out.splitlines() if line.strip().split(" ")[0] in {"10", "20", "30"}]
    assert [r[0] for r in rows] == ["10", "20", "30"]
    assert "Prompt tokens over the conversation" in out and "saved" in out
    # 30 turns end with the update: the supersede is shown, old -> new
    assert 'UPDATE "Our travel budget is 5000 euros for the whole trip." -> "Update: the travel budget is' in out
    # the store is kept where asked, and the printed command inspects it
    listing = next(line for line in out.splitlines() if " list --config " in line)
    assert (store / "memory.yaml").exists()
    config = listing.split(" --config ")[1].split()[0]
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "memory_vec",
            "list",
            "--config",
            config,
            "--kind",
            "fact",
            "--include-superseded",
            "--json",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd=tmp_path,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    texts = {r["text"]: r["valid_to"] is None for r in json.loads(proc.stdout)["records"]}
    assert texts["Our travel budget is 5000 euros for the whole trip."] is False  # kept, superseded
    assert texts["Update: the travel budget is now 8000 euros."] is True


def test_dead_letters_list_retry_drop(core: MemoryCore, config_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import dataclasses
    import time

    from memory_vec._model.records import MemoryRecord
    from memory_vec.state.base import DeadLetter

    cfg = ["--config", str(config_file)]
    code, text, _ = run(capsys, "dead-letters", *cfg)
    assert code == 0 and "(no dead letters)" in text
    records = [
        MemoryRecord(
            id=f"dl{i}", text=f"refused note {i}", role="user", user_id="alice", session_id="s1", timestamp=time.time()
        )
        for i in range(2)
    ]
    vector = [float(x) for x in parts(core).embedder.embed_documents(["refused note"])[0]]
    parts(core).store.state.add_dead_letters(
        [
            DeadLetter(
                r.id, r.user_id, r.session_id, "BackendError: refused", time.time(), dataclasses.asdict(r), vector
            )
            for r in records
        ]
    )
    code, data, _ = run(capsys, "dead-letters", "list", *cfg, "--json")
    assert code == 0 and [d["record_id"] for d in data["dead_letters"]] == ["dl0", "dl1"]
    code, data, _ = run(capsys, "dead-letters", "retry", *cfg, "--id", "dl0", "--json")
    assert code == 0 and data == {"stored": ["dl0"], "failed": {}}
    assert core.get("dl0").text == "refused note 0"
    code, text, _ = run(capsys, "dead-letters", "drop", *cfg)
    assert code == 0 and "dropped 1" in text
    assert core.dead_letters() == []


def test_dead_letters_user_limits_retry_and_drop(
    core: MemoryCore, config_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import dataclasses
    import time

    from memory_vec._model.records import MemoryRecord
    from memory_vec.state.base import DeadLetter

    cfg = ["--config", str(config_file)]
    letters = []
    for user in ("alice", "bob"):
        for i in range(2):
            r = MemoryRecord(
                id=f"{user}{i}",
                text=f"{user} note {i}",
                role="user",
                user_id=user,
                session_id="s1",
                timestamp=time.time(),
            )
            letters.append(
                DeadLetter(
                    r.id,
                    user,
                    "s1",
                    "BackendError: refused",
                    time.time(),
                    dataclasses.asdict(r),
                    [float(x) for x in parts(core).embedder.embed_documents([r.text])[0]],
                )
            )
    parts(core).store.state.add_dead_letters(letters)
    code, data, _ = run(capsys, "dead-letters", "drop", *cfg, "--user", "alice", "--json")
    assert code == 0 and data == {"dropped": 2}
    assert sorted(d.record_id for d in core.dead_letters()) == ["bob0", "bob1"]
    code, data, _ = run(capsys, "dead-letters", "retry", *cfg, "--user", "alice", "--id", "bob0", "--json")
    assert code == 0 and data == {"stored": [], "failed": {}}  # bob's letter is not alice's to retry
    code, data, _ = run(capsys, "dead-letters", "retry", *cfg, "--user", "bob", "--id", "bob0", "--json")
    assert code == 0 and data == {"stored": ["bob0"], "failed": {}}
    assert [d.record_id for d in core.dead_letters()] == ["bob1"]


def test_backfill_dates(config_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    older = MemoryCore(MemoryConfig.from_yaml(config_file).with_overrides(resolve_dates=False))
    may_8 = 1683547200.0  # 2023-05-08 12:00 UTC
    older.add_messages(
        [
            {"role": "user", "content": "I moved house yesterday", "timestamp": may_8},
            {"role": "assistant", "content": "Congratulations!", "timestamp": may_8},
        ]
    )
    cfg = ["--config", str(config_file)]
    code, data, _ = run(capsys, "backfill-dates", *cfg, "--dry-run", "--json")
    assert code == 0 and data == {"checked": 2, "dated": 1, "dry_run": True}
    code, text, _ = run(capsys, "backfill-dates", *cfg)
    assert code == 0 and "dated 1 of 2 messages" in text
    dated = {r.text: r.metadata for r in parts(older).backend.scan(_all("alice")) if r.kind == "message"}
    assert dated["I moved house yesterday"]["event_date"] == "2023-05-07"
    code, data, _ = run(capsys, "backfill-dates", *cfg, "--json")
    assert code == 0 and data["dated"] == 0


def test_an_unusable_persist_dir_exits_2_without_a_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(
        capsys, "forget", "--backend", "sqlite", "--persist-dir", "/proc/self/no-such-dir", "--user", "alice", "--yes"
    )
    assert code == 2 and "ConfigError: persist_dir '/proc/self/no-such-dir'" in err and "Traceback" not in err


def test_import_goes_into_the_user_the_command_names(
    core: MemoryCore, config_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An export of alice imported with --user bob is bob's copy; alice keeps hers."""
    core.add_messages([("user", "我对花生过敏。"), ("assistant", "记住了。")])
    cfg = ["--config", str(config_file)]
    out = tmp_path / "alice.json"
    run(capsys, "export", str(out), *cfg, "--user", "alice")
    before = sorted((r.id, r.text) for r in parts(core).backend.scan(_all("alice")))
    code, result, _ = run(capsys, "import", str(out), *cfg, "--user", "bob", "--json")
    assert code == 0 and result["user_id"] == "bob" and result["from_user_id"] == "alice"
    assert sorted((r.id, r.text) for r in parts(core).backend.scan(_all("alice"))) == before
    copied = parts(core).backend.scan(_all("bob"))
    assert len(copied) == len(before) and {r.user_id for r in copied} == {"bob"}


def test_a_config_file_with_a_yaml_syntax_error_is_a_config_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("backend: [memory\n", encoding="utf-8")
    code, _, err = run(capsys, "stats", "--config", str(bad))
    assert code == 2 and "ConfigError" in err and "bad.yaml" in err and "not valid YAML" in err


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_demo_summary_keeps_every_planted_fact(lang: str) -> None:
    """The demo's point is that early facts survive 150 turns of small talk: its summary
    keeps each one (the update's new value, not the old one), in both languages."""
    import io

    from memory_vec._cli.demo import _EN_FACTS, _ZH_FACTS, run_demo

    planted = _ZH_FACTS if lang == "zh" else _EN_FACTS
    result = run_demo(lang=lang, backend="memory", out=io.StringIO())
    summary = str(result["summary"])
    last = max(planted)
    for turn, (user_text, _) in planted.items():
        if "5000" in user_text and turn != last:
            assert user_text not in summary, "the superseded budget is not current"
        else:
            assert user_text in summary, f"planted fact lost from the summary: {user_text}"
    answers = result["answers"]
    assert isinstance(answers, dict) and all(answers.values())
