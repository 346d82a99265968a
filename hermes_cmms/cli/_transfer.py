"""The `hermes-cmms export` and `import` commands: a scope to JSON Lines and back
(docs/backup.md)."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Callable, Optional

from . import _engine
from ..common.errors import InvalidInput
from ..common.vocabulary import EXPORT_FORMATS


LEARN_AT_IMPORT = 10_000  # imported user turns read for facts before import returns (~1 min; the rest: later)
READ_LATER = ("the turns that wait are read by the scheduler, a batch a sweep interval, while Hermes or a bridge runs; "
              "`hermes-cmms maintain --job learn` reads them all now")


def _service(args, embedder: Optional[str] = "none"):
    """The engine without the embedding model unless asked: export reads SQL only, and import
    only queues its memories for the indexer (which embeds them in the next process that runs
    one, or here with --wait)."""
    return _engine._service(args, embedder=embedder)


def _bar(args, description: str, total: Optional[int]):
    """A progress bar on standard error, or None when it is not a terminal or --quiet is given.
    Reading with a total counts the file's bytes (ops/formats/run.read_at), else records."""
    if args.quiet or not sys.stderr.isatty():
        return None
    from tqdm import tqdm

    if description.endswith("reading") and total is not None:
        return tqdm(total=total, desc=description, unit="B", unit_scale=True, unit_divisor=1024,
                    file=sys.stderr, leave=False)
    return tqdm(total=total, desc=description, unit=" records", file=sys.stderr, leave=False)


def cmd_export(args) -> int:
    service = _service(args)
    try:
        if args.format == "markdown":
            return _export_notes(args, service)
        if args.output in (None, "-") or _is_stdout(args.output):  # (/dev/stdout: no summary in it)
            _export(args, service, sys.stdout.buffer)  # (`| head`: main() ends quietly, exit 141)
            return 0
        target = Path(args.output)
        try:
            if target.exists() and not target.is_file():  # a pipe, a device, /dev/stdout: into it
                with target.open("wb") as out:
                    counts = _export(args, service, out)
            else:
                counts = _export_whole(args, service, target)
        except OSError as exc:
            raise InvalidInput(f"Cannot write {args.output!r}: {exc.strerror}.") from None
    finally:
        service.close(drain_timeout=0.0)
    print(json.dumps({"scope": args.scope, "output": str(target), "counts": counts}, indent=2, ensure_ascii=False))
    return 0


def _is_stdout(path: str) -> bool:
    try:
        return os.path.samestat(os.stat(path), os.fstat(sys.stdout.fileno()))
    except (OSError, ValueError):  # no such file, or no standard output
        return False


def _export_whole(args, service, target: Path) -> dict:
    """Export into the file `target` whole or not at all: written beside it, then renamed over
    it (over the file it links to when it is a symlink, so the link stays)."""
    real = target.resolve()
    partial = real.with_name(real.name + ".partial")  # a failed export leaves no half file
    try:
        with partial.open("wb") as out:
            counts = _export(args, service, out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(partial, real)
    finally:
        partial.unlink(missing_ok=True)
    return counts


def _export_notes(args, service) -> int:
    """The scope as a folder of Markdown notes (basic-memory's shape) at --output."""
    if args.output in (None, "-"):
        raise InvalidInput("A markdown export is a folder of notes: name it with --output.")
    counts = service.transfer.export_open(args.scope, "markdown", Path(args.output), actor="cli:export")
    print(json.dumps({"scope": args.scope, "output": args.output, "format": "markdown", "counts": counts},
                     indent=2, ensure_ascii=False))
    return 0


def _export_lines(args, service, out) -> dict:
    """The scope in the MCP memory server's JSON Lines; how many entity and relation lines."""
    counts = {"entities": 0, "relations": 0}
    bar = _bar(args, "exporting", None)
    for line in service.transfer.export_open(args.scope, args.format, actor="cli:export"):
        out.write(_line(line))
        counts["entities" if line["type"] == "entity" else "relations"] += 1
        if bar is not None:
            bar.update()
    if bar is not None:
        bar.close()
    return counts


def _export(args, service, out) -> dict:
    """Write the scope's records to `out`, one JSON object a line; return the header's counts."""
    if args.format == "memory-json":
        return _export_lines(args, service, out)
    records = service.transfer.export(args.scope, actor="cli:export")
    header = next(records)
    out.write(_line(header))
    bar = _bar(args, "exporting", sum(header["counts"].values()))
    for record in records:
        out.write(_line(record))
        if bar is not None:
            bar.update()
    if bar is not None:
        bar.close()
    return header["counts"]


def _line(record: dict) -> bytes:
    return (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")


def cmd_import(args) -> int:
    if args.file == "-" and (args.source not in (None, "cmms") or args.dry_run):  # (before a store is opened)
        raise InvalidInput("Only a hermes-cmms export is read from standard input, and not for a dry run; "
                           "name the file.")
    if args.file != "-":
        from ..service import has_store, plan_import

        settings = _engine.settings_for(args, embedder="none")
        if not has_store(settings):  # no store yet: a dry run makes none, and a file refused makes none
            if args.dry_run:
                return _dry_run_without_store(args, settings)
            _checked_first(args, settings, plan_import)
    service = _service(args, embedder=_engine.storing_only(args).get("embedder") if args.wait else "none")
    bars, progress = _bars(args)

    try:
        kwargs = {"scope": args.scope, "progress": progress, "actor": "cli:import"}
        if args.file == "-":
            summary = service.transfer.import_records(sys.stdin.buffer, **kwargs)
        else:
            summary = service.transfer.import_foreign(args.file, fmt=args.source, dry_run=args.dry_run, **kwargs)
        if not args.dry_run and not args.no_learn:
            summary["learned"] = service.upkeep.learn_history(
                LEARN_AT_IMPORT, progress=lambda done, total: progress("learning", done, total))
            if summary["learned"]["waiting_turns"]:
                summary["learned"]["then"] = READ_LATER
        elif args.dry_run:
            _learning_plan(summary)
        if args.wait:
            bar = _engine.VectorBar(args)
            try:
                summary["indexed"] = service.upkeep.drain(3600.0, progress=bar)
            finally:
                bar.close()
    finally:
        _closed(bars)
        service.close(drain_timeout=0.0)
    print(json.dumps(summary, indent=2, ensure_ascii=False))
    return 0


def _dry_run_without_store(args, settings) -> int:
    """The dry run where there is no store yet: what the file would add, with no store made."""
    from ..service import plan_import

    bars, progress = _bars(args)
    try:
        summary = plan_import(settings, args.file, fmt=args.source, scope=args.scope, progress=progress)
    finally:
        _closed(bars)
    _learning_plan(summary)
    print(json.dumps(summary, indent=2, ensure_ascii=False))
    return 0


def _learning_plan(summary: dict) -> None:
    """Add to a dry run's summary how many user turns the import would read for facts before it
    returns, and how many would wait (with how to read them)."""
    turns = sum(scope.get("to_learn_from", {}).get("user_turns", 0) for scope in summary.get("scopes", {}).values())
    summary["learning"] = {"user_turns": turns, "at_import": min(turns, LEARN_AT_IMPORT),
                           "waiting": max(0, turns - LEARN_AT_IMPORT)}
    if turns > LEARN_AT_IMPORT:
        summary["learning"]["then"] = READ_LATER


def _checked_first(args, settings, plan_import: Callable) -> None:
    """Read the whole file as its dry run does before the first import makes the store: a file
    refused (damaged, foreign, nothing of its format) leaves no store behind."""
    bars, progress = _bars(args)
    try:
        plan_import(settings, args.file, fmt=args.source, scope=args.scope,
                    progress=lambda phase, done, total: progress(f"checking, {phase}", done, total))
    finally:
        _closed(bars)


def _bars(args) -> tuple[dict, Callable]:
    """The import's progress bars, one per phase, and the `progress` callback that feeds them."""
    bars: dict[str, object] = {}

    def progress(phase: str, done: int, total: Optional[int]) -> None:
        if phase not in bars:
            bars[phase] = _bar(args, phase, total)
        bar = bars[phase]
        if bar is not None:
            bar.total = total
            bar.update(done - bar.n)
    return bars, progress


def _closed(bars: dict) -> None:
    for bar in bars.values():
        if bar is not None:
            bar.close()


def register(add: Callable) -> None:
    """Add the transfer commands with `add(name, func, help)` from cli.build_parser."""
    p = add("export", cmd_export, "Write every memory, fact, belief, link, session and audit event of "
                                  "one scope as JSON Lines (vectors are rebuilt on import).")
    p.add_argument("--scope", default=_engine.OWNER, help=_engine.SCOPE_HELP)
    p.add_argument("--output", "-o", help="Write to this file (default: standard output); for markdown, "
                                          "the folder of notes.")
    p.add_argument("--format", choices=EXPORT_FORMATS, default="jsonl",
                   help="jsonl (default): hermes-cmms' own, every record, for import; memory-json: the MCP memory "
                        "server's entities and relations; markdown: a note per session or day, as basic-memory "
                        "reads them.")
    p.add_argument("--quiet", "-q", action="store_true", help="No progress bar.")
    p = add("import", cmd_import, "Import a file written by `hermes-cmms export` or by another memory or chat "
                                  "tool (see --from); what is already stored is skipped, so importing twice "
                                  "adds nothing.")
    p.add_argument("file", help="The file (or folder, for formats that are one), or '-' to read a hermes-cmms "
                                "export from standard input.")
    p.add_argument("--from", dest="source", metavar="FORMAT",
                   help="The file's format (default: recognised from the file): cmms, hermes-state, hermes-memory, "
                        "hermes-holographic, chatgpt, ... (an unknown name's error lists them all).")
    p.add_argument("--dry-run", action="store_true",
                   help="Only say what would be added (sessions, memories, facts, scopes, dates, what is skipped "
                        "and why, what is already stored); write nothing.")
    p.add_argument("--scope", help="Import into this scope instead of the file's (an export's scope; the Hermes "
                                   "user's for other formats; the local user's, local:<profile>, by default).")
    p.add_argument("--wait", action="store_true",
                   help="Load the embedding model and wait until the new memories are in the vector index.")
    p.add_argument("--no-learn", action="store_true",
                   help=f"Do not read the imported conversations' user turns for facts now (by default the "
                        f"first {LEARN_AT_IMPORT:,} turns are, about a minute): the scheduler reads what waits, "
                        f"a batch of turns a sweep interval, while Hermes or a bridge runs, and "
                        f"`maintain --job learn` all of it at once.")
    p.add_argument("--quiet", "-q", action="store_true", help="No progress bar.")
    _engine.may_create(p)
