"""What the ``memory-vec`` command does at a terminal and away from one: ``forget``
asks first (and refuses without a terminal unless ``--yes``), ``show`` prints
local times, long commands draw progress bars on a terminal only, and the demo
prints nothing but its own output (#46)."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memory_vec import MemoryCore
from memory_vec._cli import main as cli
from memory_vec._cli.main import main
from memory_vec.backends import RecordFilter
from memory_vec.testing import parts


class _Terminal(io.StringIO):
    """stdin as a terminal would be, with the user's answer already typed."""

    def isatty(self) -> bool:
        return True


def _stored(core: MemoryCore, user: str = "alice") -> int:
    return parts(core).backend.count(RecordFilter(user_id=user, include_superseded=True, include_archived=True))


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_forget_without_a_terminal_refuses_unless_yes(
    core: MemoryCore, config_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    core.add_messages([("user", "I like tea."), ("assistant", "Tea it is.")])
    before = _stored(core)
    code, _, err = _run(capsys, "forget", "--config", str(config_file), "--user", "alice")
    assert code == 2 and "InvalidInputError" in err and "--yes" in err
    assert _stored(core) == before > 0  # nothing deleted
    code, out, _ = _run(capsys, "forget", "--config", str(config_file), "--user", "alice", "--yes")
    assert code == 0 and f"records_deleted: {before}" in out and _stored(core) == 0


@pytest.mark.parametrize(("answer", "deleted"), [("y\n", True), ("yes\n", True), ("n\n", False), ("\n", False)])
def test_forget_asks_on_a_terminal(
    core: MemoryCore,
    config_file: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    answer: str,
    deleted: bool,
) -> None:
    core.add_messages([("user", "I like tea."), ("assistant", "Tea it is.")])
    core.add_message("user", "Another session.", session_id="s2")
    in_s2 = parts(core).backend.count(RecordFilter(user_id="alice", session_id="s2", include_superseded=True))
    before = _stored(core)
    monkeypatch.setattr(sys, "stdin", _Terminal(answer))
    code, out, err = _run(capsys, "forget", "--config", str(config_file), "--user", "alice", "--session", "s2")
    assert f"Delete {in_s2} stored record(s) and the working state of user 'alice', session 's2'?" in err
    if deleted:
        assert code == 0 and "records_deleted: 1" in out and _stored(core) == before - in_s2
    else:
        assert code == 1 and "nothing deleted" in err and _stored(core) == before


def test_show_prints_local_times_not_epoch_seconds(
    core: MemoryCore, config_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = core.remember("The travel budget is 5000 euros.")
    core.remember("The travel budget is 8000 euros.")
    record = core.get(old.id)
    code, out, _ = _run(capsys, "show", old.id, "--config", str(config_file))
    assert code == 0
    fields = dict(line.split(": ", 1) for line in out.split("\n\n")[0].splitlines())
    local = cli._local_time(record.timestamp)
    assert fields["timestamp"] == local and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d", local)
    assert record.valid_to is not None and fields["valid_to"] == cli._local_time(record.valid_to)
    assert str(record.timestamp) not in out  # no epoch float anywhere in the text
    # JSON keeps the numbers (and the UTC time) for programs
    code, out, _ = _run(capsys, "show", old.id, "--config", str(config_file), "--json")
    assert json.loads(out)["record"]["timestamp"] == record.timestamp


def _export_file(core: MemoryCore, tmp_path: Path, turns: int) -> Path:
    core.add_messages([("user" if i % 2 == 0 else "assistant", f"Turn {i}: the sky was blue.") for i in range(turns)])
    path = tmp_path / "alice.json"
    path.write_text(json.dumps(core.export_memories()), encoding="utf-8")
    return path


def test_import_draws_progress_bars_on_a_terminal_only(
    core: MemoryCore,
    config_file: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    export = _export_file(core, tmp_path, 6)
    cfg = ["--config", str(config_file), "--user", "bob"]
    code, _, err = _run(capsys, "import", str(export), *cfg)
    assert code == 0 and "import: " not in err  # no terminal: no bar
    monkeypatch.setattr(cli, "on_terminal", lambda: True)
    code, out, err = _run(capsys, "import", str(export), *cfg)
    n = _stored(core, "bob")
    assert code == 0 and f"imported {n} records" in out
    assert "import: embedding: 100%" in err and f"{n}/{n}" in err and "import: storing: 100%" in err
    code, out, err = _run(capsys, "import", str(export), *cfg, "--json")
    assert code == 0 and json.loads(out)["imported"] == n and "import: " not in err  # --json: no bar


def test_backfill_dates_draws_a_bar_on_a_terminal(
    core: MemoryCore, config_file: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    core.add_messages([("user", "I moved house yesterday"), ("assistant", "Congratulations!")])
    monkeypatch.setattr(cli, "on_terminal", lambda: True)
    code, _, err = _run(capsys, "backfill-dates", "--config", str(config_file), "--dry-run")
    assert code == 0 and "backfill-dates: checking: 100%" in err


def test_the_library_reports_progress_only_when_asked(
    core: MemoryCore, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = json.loads(_export_file(core, tmp_path, 4).read_text(encoding="utf-8"))
    seen: list[tuple[str, int, int]] = []
    other = MemoryCore(core.config.with_overrides(user_id="carol"))
    count = other.import_memories(data, progress=lambda what, done, total: seen.append((what, done, total)))
    assert seen == [("embedding", count, count), ("storing", count, count)]
    again = MemoryCore(core.config.with_overrides(user_id="dave"))
    capsys.readouterr()
    assert again.import_memories(data) == count
    assert capsys.readouterr().err == ""  # no bar by default


_DEMO = [sys.executable, "-m", "memory_vec", "demo", "--lang", "zh", "--turns", "10", "--every", "10"]


@pytest.mark.slow
def test_the_chinese_demo_prints_nothing_but_its_own_output(tmp_path: Path) -> None:
    """No jieba "Building prefix dict ... Loading model cost" lines, no loading bars; jieba's
    dictionary cache goes to the user cache directory, not the system temp directory."""
    env: dict[str, Any] = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "TMPDIR": str(tmp_path / "tmp"),
    }
    (tmp_path / "tmp").mkdir()
    proc = subprocess.run(
        [*_DEMO, "--persist-dir", str(tmp_path / "store")],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        cwd=tmp_path,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert "prefix dict" not in proc.stdout and "Loading model" not in proc.stdout
    assert (tmp_path / "cache" / "memory-vec" / "jieba.cache").is_file()
    assert not list((tmp_path / "tmp").glob("jieba*"))


def test_a_time_past_the_platforms_range_is_shown_as_seconds() -> None:
    assert cli._local_time(1e20) == "1e+20 (epoch seconds)"
