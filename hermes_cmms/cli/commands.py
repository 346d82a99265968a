"""The `hermes-cmms` command: a thin skin over the engine and the installer."""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import threading
import time
import traceback
from typing import Callable, Optional, Sequence

from ..common.answers import HIT_KEYS
from ..common.bounds import count_in, query_text
from ..common.errors import CmmsError, InvalidInput
from ..common.ids import public_ids, stored_id, stored_ids
from ..common.vocabulary import JOBS, MAX_AUDIT_PAGE, TIERS
from ._engine import OWNER, SCOPE_HELP, Steps, _service, may_create, owner_default, owner_scope, settings_for


def cmd_install(args) -> int:
    from ..common.config import hermes_home
    from ..install import install, uninstall

    if args.purge and not args.uninstall:
        raise InvalidInput("--purge only makes sense with --uninstall.")
    home = hermes_home(args.hermes_home)
    if args.import_history and args.uninstall:
        raise InvalidInput("--import-history only makes sense when installing.")
    lines = (uninstall(home, purge=args.purge, dry_run=args.dry_run) if args.uninstall
             else install(home, dry_run=args.dry_run))
    print("\n".join(lines))
    if not args.uninstall:
        _offer_history(args, home)
    return 0


def _offer_history(args, home) -> None:
    """Say how much of Hermes' past sessions there is and how to import it; with
    --import-history, import it (the provider's scopes for each user, as `import` does)."""
    from datetime import datetime, timezone

    from ..service import hermes_history

    history = hermes_history(home)
    if not history or not history["sessions"]:
        return
    days = [datetime.fromtimestamp(t, timezone.utc).date().isoformat() for t in (history["first"], history["last"])]
    size = f"{history['sessions']} sessions ({history['messages']} messages, {days[0]} to {days[1]})"
    if not args.import_history or args.dry_run:
        print(f"Hermes holds {size} from before hermes-cmms: import them with `hermes-cmms import "
              f"{history['path']}` (add --dry-run to see what would be added first), or install with "
              f"--import-history.")
        return
    args.create = True  # (installing may start the store)
    service = _service(args, embedder="none")
    try:
        summary = service.transfer.import_foreign(history["path"], fmt="hermes-state", actor="cli:install-hermes-plugin")
    finally:
        service.close(drain_timeout=0.0)
    added = sum(scope["memories"]["added"] for scope in summary["scopes"].values())
    print(f"Imported {added} messages of Hermes' {size} into {len(summary['scopes'])} scope(s); "
          f"they are indexed for semantic search when Hermes next runs.")


def cmd_status(args) -> int:
    service = _service(args, vectors=args.vectors)  # counting the vectors opens the index (and the embedder)
    try:
        status = service.status()
        status["by_scope"] = {entry["scope"]: entry["memories"] for entry in service.scopes()}
    finally:
        service.close(drain_timeout=0)
    if args.json:
        print(json.dumps(status, indent=2, ensure_ascii=False))
    else:
        from ._browse import inert

        for key, value in status.items():
            if value is not None and key != "by_scope":  # not counted, no error: nothing to say
                print(f"{key:>12}: {value}")
        for scope, memories in status["by_scope"].items():  # the scopes, named
            print(f"{'':>12}  {inert(scope, 200)}: {memories} memor{'y' if memories == 1 else 'ies'}")
    return 0


MAX_SEARCH_LIMIT = 50  # most results `search --limit` shows


def cmd_search(args) -> int:
    query, limit = query_text(args.query), count_in(args.limit, "limit", MAX_SEARCH_LIMIT)
    service = _service(args, vectors=True)
    try:
        steps = Steps(args)
        with steps.step(f"searching {_memories_of(service, args.scope) if steps.shown else ''}"):
            hits = service.search(args.scope, query, limit)
        result = public_ids({"results": [hit.as_dict(HIT_KEYS) for hit in hits]})
    finally:
        service.close(drain_timeout=0)
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
        return 0
    from ._browse import inert

    for hit, found in zip(result["results"], hits):  # a superseded memory says so (a newer one replaced it)
        mark = "(superseded) " if found.superseded_by else ""
        print(f"{hit['id']}  {hit['date'][:10]}  {hit['role'] or inert(hit['kind'], 12):<9} {mark}{inert(hit['content'], 200)}")
    if not result["results"]:
        print(f"No memories match {args.query!r} in scope {args.scope!r}.")
    return 0


def _memories_of(service, scope: str) -> str:
    """"the N memories of scope S", as a search's step names what it searches."""
    from ._browse import inert

    count = next((entry["memories"] for entry in service.scopes() if entry["scope"] == scope), 0)
    return f"the {count:,} memor{'y' if count == 1 else 'ies'} of scope {inert(scope, 80)!r}"


FORGET_DRAIN_S = 30.0  # after a forget's own wait, how much longer the command waits for the vector index
PENDING_EXIT = 4  # forget: done, but vectors of forgotten memories are still queued for removal


def cmd_forget(args) -> int:
    chosen = [bool(args.ids), bool(args.id), bool(args.tier or args.tag), args.all]
    if sum(chosen) != 1:
        raise InvalidInput("Say what to forget: ID..., --id, or --tier/--tag, or --all.")
    if args.scope is None and not args.ids:
        raise InvalidInput("Name the scope with --scope to forget by --id, --tier, --tag or --all.")
    args.scope = args.scope or owner_scope(args)
    service = _service(args)
    try:
        actor = f"cli:{args.actor}" if args.actor else "cli"
        if args.ids:  # the preview of all that goes with them, then the question (or --yes)
            from ._steer import confirmed

            if not confirmed(service, args.scope, stored_ids(args.ids), args.yes):
                print("Nothing was forgotten.")
                return ERROR_EXIT
            count = service.forget_many(args.scope, stored_ids(args.ids), actor=actor)
        elif args.all:
            count = service.forget_all(args.scope, actor=actor)
        elif args.id:
            for memory_id in stored_ids(args.id):  # as shown (dashed) or as stored
                service.forget(args.scope, memory_id, actor=actor)
            count = len(args.id)
        else:
            count = len(service.forget_where(args.scope, tier=args.tier, tags=args.tag or (), actor=actor))
        service.upkeep.drain(FORGET_DRAIN_S)
        pending = service.upkeep.vectors_pending(args.scope)
    finally:
        service.close(drain_timeout=0)  # (drained above)
    print(f"Forgot {count} memor{'y' if count == 1 else 'ies'} of scope {args.scope!r}.")
    if pending:
        print(f"The vectors of {pending} forgotten memor{'y' if pending == 1 else 'ies'} of scope {args.scope!r} are "
              "still queued for removal from the vector index: the next hermes-cmms process that writes the index "
              "(the Hermes gateway, an MCP bridge, the next forget, with the embedder on) removes them.", file=sys.stderr)
        return PENDING_EXIT
    return 0


MAX_AUDIT_LIST = 1_000_000  # most events `audit-log --limit` lists


def cmd_audit_log(args) -> int:
    if not 1 <= args.limit <= MAX_AUDIT_LIST:
        raise InvalidInput(f"--limit must be a whole number from 1 to {MAX_AUDIT_LIST:,}, not {args.limit}.")
    service = _service(args)
    try:
        events = _audit_pages(service, args)
    finally:
        service.close(drain_timeout=0)
    rows = public_ids([{"at": e.at, "action": e.action, "actor": e.actor, "scope": e.scope, "memory_id": e.memory_id,
                        "detail": e.detail, **({"snapshot": e.snapshot} if args.snapshots else {})} for e in events])
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    from datetime import datetime, timezone

    for row in rows:
        when = datetime.fromtimestamp(row["at"], timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
        detail = " ".join(f"{k}={v}" for k, v in row["detail"].items())
        print(f"{when}  {row['action']:<11} {row['memory_id'] or '-':<36}  {row['actor']}  {detail}")
        if args.snapshots and row.get("snapshot"):
            print(f"{'':>21}content: {row['snapshot'].get('content', '')[:200]}")
    if not rows:
        print("No audit events match.")
    return 0


def _audit_pages(service, args) -> list:
    """Up to --limit events, newest first, fetched a service page (MAX_AUDIT_PAGE) at a time."""
    events: list = []
    while len(events) < args.limit:
        wanted = min(MAX_AUDIT_PAGE, args.limit - len(events))
        page = service.audit_log(args.scope, memory_id=stored_id(args.memory_id), action=args.action, limit=wanted,
                                 offset=len(events))
        events += page
        if len(page) < wanted:
            break
    return events


def cmd_consolidate(args) -> int:
    service = _service(args)
    try:
        service.upkeep.drain(120)
        report = public_ids(service.consolidate(args.scope, args.session, actor="cli").as_dict())
    finally:
        service.close()
    print(json.dumps(report, indent=2) if args.json else
          f"Looked at {report['examined']} new episodic memories of {args.scope!r}: "
          f"{report['clusters']} summaries now stand for {report['consolidated']} of them.")
    return 0


def cmd_maintain(args) -> int:
    service = _service(args)
    try:
        results = {}
        if args.job in ("sweep", "all"):
            results["sweep"] = {"expired": service.upkeep.sweep()}
        if args.job in ("decay", "all"):
            results["decay"] = service.upkeep.decay()
        if args.job in ("consolidate", "all"):
            results["consolidate"] = service.upkeep.consolidate_all()
        if args.job in ("learn", "all"):
            results["learn"] = service.upkeep.learn_history()
    finally:
        service.close()
    print(json.dumps(public_ids(results), indent=2))
    return 0


def cmd_doctor(args) -> int:
    from ..service import run_checks

    failed = False
    for level, name, detail in run_checks(args.hermes_home):
        print(f"{level:<4} {name}: {detail}")
        failed = failed or level == "FAIL"
    return 1 if failed else 0


def _port(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"must be a whole number from 1 to 65535, not {text!r}")
    return int(text)


def cmd_mcp(args) -> int:
    from ..mcp_bridge import serve

    settings_for(args)  # a bridge on a typo'd home starts no store there
    serve(args.hermes_home, transport=args.transport, host=args.host, port=args.port, scope=args.scope)
    return 0


def cmd_plugins(args) -> int:
    from ..common.plugins import describe, make_plugin_manager

    for plugin in describe(make_plugin_manager()):
        print(f"{plugin['name']}: {', '.join(plugin['hooks'])}")
    return 0


def cmd_bench(args) -> int:
    from .. import bench

    result = bench.run(args.suite, args.file, budget=args.budget, json_out=args.json,
                       convs=getattr(args, "convs", ""), ks=getattr(args, "k", ""),
                       limit=getattr(args, "limit", None), dated=not getattr(args, "undated", False),
                       imported=getattr(args, "imported", False))
    bench.report(result)
    return 0


def _add_bench(sub) -> None:
    bench = sub.add_parser("bench", help="Measure recall on LoCoMo or LongMemEval data.",
                           description="Measure recall by driving the cmms provider as Hermes does, "
                                       "one fresh temporary Hermes home per conversation.")
    suites = bench.add_subparsers(dest="suite", required=True)
    for name, help_text in (("locomo", "LoCoMo evidence recall (categories 1-4)."),
                            ("longmemeval", "LongMemEval_S recall_any@k / recall_all@k.")):
        p = suites.add_parser(name, help=help_text, description=help_text)
        p.add_argument("file", help="The benchmark data (JSON).")
        p.add_argument("--budget", type=int, help="Recall token budget (default: the cmms setting, 600).")
        p.add_argument("--json", metavar="OUT", help="Also write every figure to this JSON file.")
        p.set_defaults(func=cmd_bench)
    locomo = suites.choices["locomo"]
    locomo.add_argument("--convs", default="", help="Only these sample ids, comma-separated.")
    locomo.add_argument("--undated", action="store_true",
                        help="Ingest every session now (default: each at its own LoCoMo date).")
    locomo.add_argument("--imported", action="store_true",
                        help="Write the sessions as a ChatGPT export and import it (default: fed turn by turn).")
    lme = suites.choices["longmemeval"]
    lme.add_argument("--k", default="1,3,5,10", help="Cut-offs for recall@k (default: 1,3,5,10).")
    lme.add_argument("--limit", type=int, help="Only the first N answerable questions.")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hermes-cmms", description="Composite Memory for Hermes Agent.")
    sub = parser.add_subparsers(dest="command", required=True)

    def add(name: str, func: Callable, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument("--hermes-home", help="Hermes home directory (default: $HERMES_HOME or ~/.hermes)")
        p.set_defaults(func=func)
        return p

    p = add("install-hermes-plugin", cmd_install, "Install (or remove) the cmms provider in a Hermes home.")
    p.add_argument("--dry-run", action="store_true", help="Show what would change, change nothing.")
    p.add_argument("--uninstall", action="store_true", help="Remove the plugin and restore the previous provider.")
    p.add_argument("--purge", action="store_true", help="With --uninstall: also delete the stored memories.")
    p.add_argument("--import-history", action="store_true",
                   help="Also import Hermes' past sessions (state.db) into each user's scope; importing again "
                        "later adds only what is new.")
    p = add("status", cmd_status, "Show the store, its counts, the embedder in use and the index lag.")
    p.add_argument("--vectors", action="store_true",
                   help="Also count the vectors in the index (opens it and loads the embedder: slower).")
    p.add_argument("--json", action="store_true")
    p = add("search", cmd_search, "Search memories of one scope.")
    p.add_argument("query")
    p.add_argument("--scope", default=OWNER, help=SCOPE_HELP)
    p.add_argument("--limit", type=int, default=8)
    p.add_argument("--json", action="store_true")
    p = add("mcp", cmd_mcp, "Serve this memory to MCP clients (stdio by default, or streamable HTTP).")
    p.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    p.add_argument("--host", default="127.0.0.1",
                   help="HTTP address (default 127.0.0.1; any other needs CMMS_MCP_TOKEN)")
    p.add_argument("--port", type=_port, default=8765, help="HTTP port (default 8765)")
    p.add_argument("--scope", help="Scope of the CMMS-style tools (default: the Hermes CLI user's, "
                                   "local:<profile>)")
    may_create(p)
    p = add("forget", cmd_forget, "Forget memories of one scope: by id, tier or tag, or all of them.")
    p.add_argument("ids", nargs="*", metavar="ID", help="Memories to forget: shows all that goes with them "
                                                         "and asks first (default scope: local:<profile>).")
    p.add_argument("--yes", action="store_true", help="With ID...: forget without asking.")
    p.add_argument("--scope", help="The scope, e.g. user:telegram:12345 or local:default (required but with ID...).")
    p.add_argument("--id", action="append", help="A memory id (repeatable).")
    p.add_argument("--tier", choices=TIERS, help="Every memory of this tier.")
    p.add_argument("--tag", action="append", help="Memories carrying this tag (repeatable: all must match).")
    p.add_argument("--all", action="store_true",
                   help="Everything of the scope, and the content of its audit snapshots (right to be forgotten).")
    p.add_argument("--actor", help="Who asked (recorded on the audit trail).")
    p = add("audit-log", cmd_audit_log, "Show the audit trail: writes, tool calls, lifecycle moves, forgets.")
    p.add_argument("--scope", help="Only this scope.")
    p.add_argument("--memory-id", help="Only events of this memory.")
    p.add_argument("--action", help="Only this action (remember, retain, reinforce, supersede, forget, ...).")
    p.add_argument("--limit", type=int, default=50)
    p.add_argument("--snapshots", action="store_true", help="Include the content snapshots taken before forgets.")
    p.add_argument("--json", action="store_true")
    p = add("consolidate", cmd_consolidate, "Consolidate a scope's new episodic memories into summaries.")
    p.add_argument("--scope", required=True)
    p.add_argument("--session", help="Only this conversation session.")
    p.add_argument("--json", action="store_true")
    p = add("maintain", cmd_maintain, "Run the scheduler's jobs once, now: TTL sweep, decay, consolidation, "
                                          "reading imported conversations for facts (all that wait).")
    p.add_argument("--job", choices=JOBS, default="all")
    add("doctor", cmd_doctor, "Check the Hermes install, plugin files, config, embedder and database.")
    add("plugins", cmd_plugins, "List loaded hermes-cmms plugins and the hooks each implements.")
    from ._knowledge import register

    register(add)
    from ._steer import register as register_steer

    register_steer(add)
    from ._transfer import register as register_transfer

    register_transfer(add)
    from ._browse import register as register_browse

    register_browse(add)
    from ._ui import register as register_ui

    register_ui(add)
    from ._inspect import register as register_inspect

    register_inspect(add)
    from ._demo import register as register_demo

    register_demo(add)
    _add_bench(sub)
    return parser


SETTLE_S = 2.0  # at exit, how long the engine's threads (told to stop by close) may take to end
# Exit codes (docs/commands.md): 0 done; 1 an error, said in one sentence (a bug: its
# traceback), or a failed `doctor` check; 2 a usage error, from argparse; 3 `audit` found
# something; 4 `forget` done, but vectors still queued for removal (PENDING_EXIT); 130
# interrupted; 141 the output's reader went away (`hermes-cmms doctor | head`).
ERROR_EXIT = 1
PIPE_EXIT = 128 + 13  # what a shell reports for a command ended by SIGPIPE


def main(argv: Optional[Sequence[str]] = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        code = run(args.func, args)
        sys.stdout.flush()
    except BrokenPipeError:
        code = reader_gone()
    if argv is None:  # this process is the command: once its threads are done, it ends (exit_now)
        settled()
        exit_now(code)
    return code


def reader_gone() -> int:
    """The reader of standard output has gone (`| head`): say nothing more, and no traceback,
    then or when the interpreter flushes at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return PIPE_EXIT


def run(command, args: argparse.Namespace) -> int:
    """Run one command: its exit code, an error said in one sentence (a bug: its traceback)."""
    try:
        owner_default(args)
        return command(args)
    except CmmsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ERROR_EXIT
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        raise  # not a bug: main() ends quietly
    except Exception:  # noqa: BLE001 - a bug: its traceback, then the same clean exit
        traceback.print_exc()
        return ERROR_EXIT


def settled(timeout: float = SETTLE_S) -> bool:
    """Whether the engine's threads have ended (waiting up to `timeout` for them)."""
    deadline = time.monotonic() + timeout
    for thread in threading.enumerate():
        if thread.daemon and thread.name.startswith("cmms-"):
            thread.join(max(0.0, deadline - time.monotonic()))
    return not any(t.is_alive() and t.daemon and t.name.startswith("cmms-") for t in threading.enumerate())


def exit_now(code: int) -> None:
    """End the process with `code`, output flushed, without finalising the interpreter.

    How every command ends: what it wrote is closed by then (its service, in the command), and
    the interpreter's teardown of Chroma, SQLAlchemy and the rest would keep the person at the
    prompt waiting 0.2-0.7 s more (docs/benchmarks.md). It is also the way out while an engine
    thread still runs: Python ends such a daemon thread from under it at exit, and the process
    dies of SIGABRT ("terminate called without an active exception") when the thread is inside
    torch's C++ or safetensors' Rust code, as the indexer is while it loads the embedding model
    (tens of seconds on a busy machine, and it cannot be cut short) or embeds a batch. The store
    is already closed; a vector write cut short here is what a SIGKILL leaves, which the outbox
    repairs."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
