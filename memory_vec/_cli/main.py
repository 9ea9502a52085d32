"""The ``memory-vec`` command (also ``python -m memory_vec``).

Subcommands work on the store a config names: ``--config FILE.yaml``, or the
``MEMORY_VEC_*`` environment variables (:meth:`MemoryConfig.from_env`), with
``--backend/--persist-dir/--url/--collection/--user/--session`` overrides.

Exit codes: 0 ok; 1 not found / nothing matched; 2 bad input or config;
3 backend unavailable. Errors are printed as ``memory-vec: ErrorName: message``
on stderr (no traceback); with ``--json`` an ``{"error": ...}`` object is
also printed on stdout.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memory_vec._cli.ops import (
    EXIT_BAD_INPUT,
    EXIT_NOT_FOUND,
    EXIT_OK,
    compact_store,
    exit_code,
    record_dict,
    store_stats,
)
from memory_vec._cli.progress import TerminalProgress, ask, on_terminal, stdin_is_terminal
from memory_vec._model.errors import ConfigError, InvalidInputError, MemoryNotFoundError, MemoryVecError
from memory_vec._model.queries import RecordFilter
from memory_vec._model.records import to_datetime

if TYPE_CHECKING:
    from memory_vec._core import MemoryCore
    from memory_vec._model.config import MemoryConfig

__all__ = ["build_parser", "main"]

# Whether the in-process-backend note was printed (once per process).
_notes_shown: set[str] = set()


# ---------------------------------------------------------------- store setup
def _config(args: argparse.Namespace) -> MemoryConfig:
    from memory_vec._model.config import MemoryConfig

    if args.config:
        try:
            cfg = MemoryConfig.from_yaml(args.config)  # a YAML syntax error is a ConfigError naming the file
        except FileNotFoundError as exc:
            raise ConfigError(f"--config: no such file {args.config!r}") from exc
        except OSError as exc:
            raise ConfigError(f"--config: cannot read {args.config!r}: {exc}") from exc
    else:
        cfg = MemoryConfig.from_env()
    overrides = {
        "backend": args.backend,
        "persist_dir": args.persist_dir,
        "url": args.url,
        "collection": args.collection,
        "user_id": args.user,
        "session_id": args.session,
    }
    overrides = {k: val for k, val in overrides.items() if val is not None}
    return cfg.with_overrides(**overrides) if overrides else cfg


def _core(cfg: MemoryConfig) -> MemoryCore:
    from memory_vec._core import MemoryCore

    if cfg.backend == "memory" and "memory" not in _notes_shown:
        _notes_shown.add("memory")
        print(
            "memory-vec: note: backend 'memory' keeps records inside this process only; "
            "use sqlite, chroma or milvus for a store that outlives the command",
            file=sys.stderr,
        )
    return MemoryCore(cfg)


def _emit(args: argparse.Namespace, data: Any, text: str) -> None:
    if args.json:
        print(json.dumps(data, ensure_ascii=False, indent=2, default=str))
    elif text:
        print(text)


def _bars(args: argparse.Namespace, command: str) -> TerminalProgress:
    """Progress bars for a long command: on a terminal, never with --json."""
    return TerminalProgress(command, enabled=not args.json and on_terminal())


def _local_time(epoch: float) -> str:
    """Epoch seconds as ISO 8601 in the local time zone, to the second, with its offset."""
    try:
        return datetime.fromtimestamp(epoch).astimezone().isoformat(timespec="seconds")
    except (OverflowError, ValueError, OSError):  # past what the platform's clock functions take
        return f"{epoch} (epoch seconds)"


# Record fields held as epoch seconds: shown as local times in the text output (JSON keeps the numbers).
_EPOCH_FIELDS = ("timestamp", "valid_to", "expire_at", "last_recalled_at")


def _short(text: str, width: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _line(r: dict[str, Any]) -> str:
    flags = "".join(
        [
            "S" if r["valid_to"] is not None else "",
            "P" if r["pinned"] else "",
            "A" if r["archived"] else "",
        ]
    )
    return (
        f"{r['id']}  {_local_time(r['timestamp'])[:19].replace('T', ' ')}  {r['user_id']}/{r['session_id']}  "
        f"{r['kind']:<7} {r['role']:<9} "
        f"{flags:<3} {_short(r['text'])}"
    )


# ---------------------------------------------------------------- commands
def _demo(args: argparse.Namespace) -> int:
    from memory_vec._cli.demo import run_demo

    run_demo(
        lang=args.lang,
        backend=args.backend,
        turns=args.turns,
        persist_dir=args.persist_dir,
        llm_url=args.llm,
        llm_model=args.llm_model,
        every=args.every,
    )
    return 0


def _dead_letters(args: argparse.Namespace) -> int:
    cfg = _config(args)
    core = _core(cfg)
    ids = args.ids
    if args.user is not None and args.action in ("retry", "drop"):  # --user limits them as it limits list
        ids = [d.record_id for d in core.dead_letters(user_id=args.user) if not ids or d.record_id in ids]
    if args.action == "retry":
        outcome = core.retry_dead_letters(ids)
        data: dict[str, Any] = {"stored": outcome.stored, "failed": outcome.failed}
        text = "\n".join(
            [f"stored {len(outcome.stored)} record(s) again"]
            + [f"  still refused {i}: {why}" for i, why in outcome.failed.items()]
        )
        _emit(args, data, text)
        return EXIT_OK if not outcome.failed else EXIT_NOT_FOUND
    if args.action == "drop":
        dropped = core.drop_dead_letters(ids)
        _emit(args, {"dropped": dropped}, f"dropped {dropped} dead letter(s)")
        return EXIT_OK
    letters = [d for d in core.dead_letters(user_id=args.user) if not args.ids or d.record_id in args.ids]
    rows = [
        {
            "record_id": d.record_id,
            "user_id": d.user_id,
            "session_id": d.session_id,
            "failed_at": to_datetime(d.failed_at).isoformat(),
            "error": d.error,
            "text": str(d.record.get("text", "")),
        }
        for d in letters
    ]
    _emit(
        args,
        {"dead_letters": rows},
        "\n".join(
            f"{r['record_id']}  {r['failed_at'][:19]}  {r['user_id']}/{r['session_id']}  "
            f"{_short(r['text'], 40)}\n    {r['error'][:200]}"
            for r in rows
        )
        or "(no dead letters)",
    )
    return EXIT_OK


def _stats(args: argparse.Namespace) -> int:
    cfg = _config(args)
    stats = store_stats(_core(cfg), cfg, user_id=args.user)
    lines = [f"{k}: {val}" for k, val in stats.items()]
    _emit(args, stats, "\n".join(lines))
    return EXIT_OK


def _list(args: argparse.Namespace) -> int:
    if args.limit < 1:
        raise InvalidInputError(f"--limit must be at least 1, got {args.limit}")
    cfg = _config(args)
    core = _core(cfg)
    where = RecordFilter(
        user_id=args.user,
        session_id=args.session,
        kinds=(args.kind,) if args.kind else None,
        include_superseded=args.include_superseded,
        include_archived=args.include_superseded,
    )
    found = sorted(core._parts.backend.scan(where), key=lambda r: (-r.timestamp, -r.seq))
    rows = [record_dict(r) for r in found[: args.limit]]
    _emit(
        args,
        {"total": len(found), "shown": len(rows), "records": rows},
        "\n".join([_line(r) for r in rows] + [f"({len(rows)} of {len(found)} shown)"]),
    )
    return EXIT_OK if found else EXIT_NOT_FOUND


def _search(args: argparse.Namespace) -> int:
    cfg = _config(args)
    hits = _core(cfg).recall(args.text, k=args.k, scope=args.scope)
    rows: list[dict[str, Any]] = [
        {
            "id": h.id,
            "score": round(h.score, 4),
            "text": h.text,
            "role": h.role,
            "kind": h.kind,
            "session_id": h.session_id,
            "time": h.timestamp.isoformat(),
        }
        for h in hits
    ]
    _emit(
        args,
        {"query": args.text, "user_id": cfg.user_id, "hits": rows},
        "\n".join(
            f"{h.score:.3f}  {h.id}  {_local_time(h.timestamp.timestamp())[:19].replace('T', ' ')}  {h.role:<9} "
            f"{_short(h.text)}"
            for h in hits
        )
        or "(no memory matched)",
    )
    return EXIT_OK if rows else EXIT_NOT_FOUND


def _show(args: argparse.Namespace) -> int:
    cfg = _config(args)
    core = _core(cfg)
    found = core._parts.backend.get([args.id])
    if not found or (args.user is not None and found[0].user_id != args.user):
        raise MemoryNotFoundError(f"no memory {args.id!r}" + (f" for user {args.user!r}" if args.user else ""))
    record = core.get(args.id, user_id=found[0].user_id)
    chain = core.history(args.id, user_id=record.user_id)
    shown = record_dict(record)
    data = {"record": shown, "history": [record_dict(r) for r in chain]}
    readable = {
        k: _local_time(val) if k in _EPOCH_FIELDS and val is not None else val
        for k, val in shown.items()
        if k != "time"  # the UTC copy of timestamp, for JSON readers
    }
    text = "\n".join(
        [f"{k}: {val}" for k, val in readable.items()]
        + ["", "history (oldest first):"]
        + [("→ " if r.id == record.id else "  ") + _line(record_dict(r)) for r in chain]
    )
    _emit(args, data, text)
    return EXIT_OK


def _forget(args: argparse.Namespace) -> int:
    if args.user is None:
        raise InvalidInputError("forget needs --user USER (and optionally --session SESSION)")
    what = f"user {args.user!r}" + (f", session {args.session!r}" if args.session else " (every session)")
    if not args.yes and not stdin_is_terminal():
        raise InvalidInputError(f"forget deletes every memory of {what} for good: pass --yes to confirm")
    core = _core(_config(args))
    if not args.yes:
        where = RecordFilter(user_id=args.user, session_id=args.session, include_superseded=True, include_archived=True)
        count = core._parts.backend.count(where)
        if not ask(f"Delete {count} stored record(s) and the working state of {what}? This cannot be undone."):
            print("memory-vec: forget: not confirmed; nothing deleted", file=sys.stderr)
            return EXIT_NOT_FOUND
    receipt = core.forget(user_id=args.user, session_id=args.session)
    data = dataclasses.asdict(receipt)
    _emit(args, data, "\n".join(f"{k}: {val}" for k, val in data.items()))
    return EXIT_OK if receipt.records_deleted or receipt.sessions_cleared else EXIT_NOT_FOUND


def _export(args: argparse.Namespace) -> int:
    if args.user is None:
        raise InvalidInputError("export needs --user USER")
    data = _core(_config(args)).export_memories(user_id=args.user)
    summary = {
        "user_id": args.user,
        "records": len(data["records"]),
        "sessions": len(data["sessions"]),
        "file": args.file,
    }
    if not data["records"] and not data["sessions"]:
        _emit(args, {**summary, "file": None}, f"nothing stored for user {args.user!r}; no file written")
        return EXIT_NOT_FOUND
    payload = json.dumps(data, ensure_ascii=False)
    try:
        with open(args.file, "w", encoding="utf-8") as fh:
            fh.write(payload)
    except OSError as exc:
        raise InvalidInputError(f"export: cannot write {args.file!r}: {exc.strerror or exc}") from exc
    _emit(
        args,
        summary,
        f"exported {summary['records']} records and {summary['sessions']} sessions of {args.user!r} to {args.file}",
    )
    return EXIT_OK


def _import(args: argparse.Namespace) -> int:
    try:
        with open(args.file, encoding="utf-8") as fh:
            data = json.load(fh)
    except FileNotFoundError as exc:
        raise InvalidInputError(f"import: no such file {args.file!r}") from exc
    except (OSError, ValueError) as exc:
        raise InvalidInputError(f"import: {args.file!r} is not a readable JSON export: {exc}") from exc
    # Into the user of the config (or --user): an export of another user becomes that user's copy.
    core = _core(_config(args))
    with _bars(args, "import") as bar:
        count = core.import_memories(data, allow_shared=args.allow_shared, progress=bar)
    user, source = core.config.user_id, data.get("user_id")
    copied = "" if source == user else f" (a copy of {source!r}'s export)"
    _emit(
        args,
        {"user_id": user, "from_user_id": source, "imported": count, "file": args.file},
        f"imported {count} records into {user!r} from {args.file}{copied}",
    )
    return EXIT_OK


def _reembed(args: argparse.Namespace) -> int:
    from memory_vec._model.errors import EmbeddingError
    from memory_vec._pipelines.maintenance import reembed
    from memory_vec.embeddings import get_embedder

    cfg = _config(args)
    try:
        embedder = get_embedder(args.model, device=cfg.embedding_device, batch_size=cfg.embedding_batch_size)
    except MemoryVecError:
        raise
    except Exception as exc:  # model loaders raise OSError, ValueError, ...
        raise EmbeddingError(f"reembed: cannot load embedding model {args.model!r}: {exc}") from exc
    # An in-process store exists only inside a core; a persistent one is
    # opened from the config, so the old model's guard does not refuse it.
    target = _core(cfg) if cfg.backend == "memory" else cfg
    result = reembed(target, embedder, progress=not args.json and on_terminal())
    data = {"records": result.records, "model_id": result.model_id, "dimension": result.dimension}
    _emit(
        args,
        data,
        f"re-embedded {result.records} records with {result.model_id} ({result.dimension}-d); "
        f"set embedding_model: {args.model} in your config",
    )
    return EXIT_OK


def _backfill_dates(args: argparse.Namespace) -> int:
    from memory_vec._pipelines.maintenance import backfill_dates

    core = _core(_config(args))
    with _bars(args, "backfill-dates") as bar:
        result = backfill_dates(core, user_id=args.user, dry_run=args.dry_run, progress=bar)
    _emit(
        args,
        {"checked": result.checked, "dated": result.dated, "dry_run": result.dry_run},
        f"{'would date' if args.dry_run else 'dated'} {result.dated} of {result.checked} messages (event_date)",
    )
    return EXIT_OK


def _compact(args: argparse.Namespace) -> int:
    cfg = _config(args)
    core = _core(cfg)
    with _bars(args, "compact") as bar:
        report = compact_store(core, user_id=args.user, dry_run=args.dry_run, progress=bar)
    lines = [
        (
            f"{'would merge' if args.dry_run else 'merged'} {report['merged']} duplicate facts into "
            f"{len(report['merges'])} survivors ({report['users']} users checked)"
        )
    ]
    lines += [f"  {m['survivor']} ← {', '.join(m['merged'])}  {_short(m['text'], 60)}" for m in report["merges"]]
    _emit(args, report, "\n".join(lines))
    return EXIT_OK


_EVERY_SUPERSEDED = RecordFilter(include_superseded=True, kinds=("message", "fact"))


def _recheck_supersedes(args: argparse.Namespace) -> int:
    core = _core(_config(args))
    users = [args.user] if args.user else sorted({r.user_id for r in core._parts.backend.scan(_EVERY_SUPERSEDED)})
    found = []
    with _bars(args, "recheck-supersedes") as bar:
        for done, user in enumerate(users, start=1):
            found += [(user, x) for x in core.recheck_superseded(user_id=user, apply=args.apply)]
            bar("users", done, len(users))
    verb = "restored" if args.apply else "would restore"
    lines = [f"{verb} {len(found)} superseded memories ({len(users)} users checked)"]
    lines += [f"  {x.record_id} {_short(x.text, 50)!r}  <- {_short(x.by_text, 50)!r}: {x.reason}" for _, x in found]
    data = {
        "users": len(users),
        "applied": args.apply,
        "restored" if args.apply else "would_restore": [{"user_id": u, **dataclasses.asdict(x)} for u, x in found],
    }
    _emit(args, data, "\n".join(lines))
    return EXIT_OK


# ---------------------------------------------------------------- parser
def _store_options() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False)
    g = p.add_argument_group("store (default: MEMORY_VEC_* environment variables)")
    g.add_argument("--config", metavar="FILE.yaml", help="MemoryConfig as YAML (instead of the environment)")
    g.add_argument("--backend", choices=["memory", "sqlite", "chroma", "milvus"], default=None)
    g.add_argument("--persist-dir", default=None)
    g.add_argument("--url", default=None, help="server URL, http(s)://host:port")
    g.add_argument("--collection", default=None)
    g.add_argument("--user", default=None, help="user id (filter, or the user to act on)")
    g.add_argument("--session", default=None, help="session id (filter, or the session to act on)")
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")
    return p


def _add_upkeep_commands(sub: Any, store: argparse.ArgumentParser) -> None:
    """reembed, dead-letters, backfill-dates, recheck-supersedes, compact: operations on a stored collection."""
    p = sub.add_parser("reembed", parents=[store], help="rebuild every vector with another embedding model")
    p.add_argument("--model", required=True)
    p.set_defaults(func=_reembed)
    p = sub.add_parser(
        "dead-letters", parents=[store], help="records the backend refused: list them, retry them, or drop them"
    )
    p.add_argument("action", choices=["list", "retry", "drop"], nargs="?", default="list")
    p.add_argument("--id", action="append", dest="ids", help="only this record id (repeatable)")
    p.set_defaults(func=_dead_letters)
    p = sub.add_parser(
        "backfill-dates",
        parents=[store],
        help="store the dates older messages refer to ('yesterday', '上周五') as event_date",
    )
    p.add_argument("--dry-run", action="store_true", help="count only; change nothing")
    p.set_defaults(func=_backfill_dates)
    p = sub.add_parser(
        "recheck-supersedes",
        parents=[store],
        help="list superseded memories today's rules would keep current (events, past, reported, hypothetical "
        "values); --apply restores them",
    )
    p.add_argument("--apply", action="store_true", help="restore them (default: only list)")
    p.set_defaults(func=_recheck_supersedes)
    p = sub.add_parser("compact", parents=[store], help="merge near-duplicate facts of --user (or every user)")
    p.add_argument("--dry-run", action="store_true", help="show the merges without applying them")
    p.set_defaults(func=_compact)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memory-vec", description="Conversation memory for LLM apps.")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run the offline demo conversation")
    demo.add_argument("--lang", choices=["en", "zh"], default="en")
    demo.add_argument(
        "--backend",
        choices=["memory", "sqlite", "chroma", "milvus"],
        default=None,
        help="default: sqlite (a file in --persist-dir); memory keeps nothing",
    )
    demo.add_argument("--turns", type=int, default=150)
    demo.add_argument("--every", type=int, default=10, help="print every N turns")
    demo.add_argument("--persist-dir", default=None, help="where the demo's store is kept (default ./.memory_vec/demo)")
    demo.add_argument(
        "--llm", default=None, metavar="URL", help="OpenAI-compatible base URL, e.g. http://localhost:8000/v1"
    )
    demo.add_argument("--llm-model", default="gpt-4o-mini")
    demo.set_defaults(func=_demo)

    store = _store_options()
    p = sub.add_parser("stats", parents=[store], help="counts of the store (or of --user)")
    p.set_defaults(func=_stats)
    p = sub.add_parser("list", parents=[store], help="stored memories, newest first")
    p.add_argument("--kind", choices=["message", "fact", "summary"], default=None)
    p.add_argument("--limit", type=int, default=20)
    p.add_argument("--include-superseded", action="store_true", help="also superseded and archived records")
    p.set_defaults(func=_list)
    p = sub.add_parser("search", parents=[store], help="recall memories of the config's (or --user's) user")
    p.add_argument("text")
    p.add_argument("--k", type=int, default=5)
    p.add_argument("--scope", choices=["user", "session"], default="user")
    p.set_defaults(func=_search)
    p = sub.add_parser("show", parents=[store], help="one memory and its supersede history")
    p.add_argument("id")
    p.set_defaults(func=_show)
    p = sub.add_parser(
        "forget",
        parents=[store],
        help="remove everything of --user (or of one --session); asks first on a terminal, else needs --yes",
    )
    p.add_argument("--yes", "-y", action="store_true", help="do not ask: delete (needed without a terminal)")
    p.set_defaults(func=_forget)
    p = sub.add_parser("export", parents=[store], help="write everything of --user to a JSON file")
    p.add_argument("file")
    p.set_defaults(func=_export)
    p = sub.add_parser("import", parents=[store], help="restore a JSON export into the config's user (or --user)")
    p.add_argument("file")
    p.add_argument(
        "--allow-shared",
        action="store_true",
        help="also restore records shared with other users (global / agent visibility)",
    )
    p.set_defaults(func=_import)
    _add_upkeep_commands(sub, store)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error (2)
        return exc.code if isinstance(exc.code, int) else EXIT_BAD_INPUT
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # the CLI reports our named errors without a traceback
        if not isinstance(exc, MemoryVecError):
            raise
        code = exit_code(exc)
        print(f"memory-vec: {type(exc).__name__}: {exc}", file=sys.stderr)
        if getattr(args, "json", False):
            print(json.dumps({"error": type(exc).__name__, "message": str(exc), "exit_code": code}, ensure_ascii=False))
        return code
