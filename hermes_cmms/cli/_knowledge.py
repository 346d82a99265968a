"""The knowledge commands of `hermes-cmms`: learn, beliefs, graph, route, audit, reindex, metrics."""
from __future__ import annotations

import argparse
import json
import sys
from typing import Callable

from ..common.errors import InvalidInput
from ..common.ids import public_ids, shown_id, stored_id
from ..common.vocabulary import AUDIT_CHOICES, REFLECT_MODES, STRATEGIES
from ._engine import OWNER, SCOPE_HELP, VectorBar, _service, may_create, storing_only

FOUND_EXIT = 3  # `audit` found something (1 is an error, 2 a usage error: cli/commands.py)


def _run(args, work: Callable, vectors: bool = False, **overrides) -> object:
    """Open the engine (ready to rank by vectors with `vectors`), do one thing, close it
    (waiting for the indexer when asked)."""
    service = _service(args, vectors=vectors, **overrides)
    try:
        return work(service)
    finally:
        service.close(drain_timeout=30.0 if getattr(args, "drain", False) else 0.0)


def _print(result, args) -> None:
    print(json.dumps(public_ids(result), indent=2, ensure_ascii=False, default=str))  # ids dashed


def _stdin_text() -> str:
    """Standard input as text, whatever the locale: a byte that is not UTF-8 becomes U+FFFD (as
    in a --file), never a UnicodeDecodeError."""
    return sys.stdin.buffer.read().decode("utf-8", "replace")


def cmd_learn(args) -> int:
    if (args.text is None) == (args.file is None):
        raise InvalidInput("Give the text to learn from, '-' for standard input, or --file PATH.")
    if args.file:
        try:
            with open(args.file, encoding="utf-8", errors="replace") as handle:
                text = handle.read()
        except OSError as exc:
            raise InvalidInput(f"Cannot read {args.file!r}: {exc.strerror}.") from None
    else:
        text = _stdin_text() if args.text == "-" else args.text
    args.drain = True
    result = _run(args, lambda s: s.learn(args.scope, text, source=args.source or "cli:learn",
                                          extract_beliefs=not args.no_beliefs))
    if args.json:
        _print(result, args)
        return 0
    print(f"Kept the text as {shown_id(result['id'])} and learned {len(result['learned'])} item(s):")
    for item in result["learned"]:
        print(f"  {item['kind']:<10} {shown_id(item['id'])}  {item['text'][:160]}{'  (reinforced)' if item['reinforced'] else ''}")
    return 0


def cmd_beliefs(args) -> int:
    from ._browse import inert

    action = args.action
    if action == "list":
        result = _run(args, lambda s: s.get_belief(args.scope, text=args.text, state=args.state,
                                                   min_confidence=args.min_confidence, tags=args.tag or (),
                                                   source=args.source, limit=args.limit),
                      vectors=bool(args.text))  # beliefs about a text are ranked by meaning too
        if not args.json:
            for b in result["beliefs"]:
                print(f"{shown_id(b['id'])}  {b['confidence']:.2f}  {b['state']:<10} {inert(b['text'], 160)}")
            print(f"{result['matched']} belief(s) match.")
            return 0
    elif action == "set":
        args.drain = True
        result = _run(args, lambda s: s.set_belief(args.scope, args.text, confidence=args.confidence,
                                                   evidence=args.evidence, supersedes=stored_id(args.supersedes),
                                                   source="cli:beliefs"))
        if not args.json:
            print(belief_line(result))
            return 0
    elif action == "resolve":
        result = _run(args, lambda s: s.resolve_conflict(args.scope, stored_id(args.belief_a), stored_id(args.belief_b),
                                                         args.strategy, merged_text=args.merged_text,
                                                         actor="cli"))
    else:
        result = _run(args, lambda s: s.reflect(args.scope, args.mode))
    _print(result, args)
    return 0


SET_SAYS = {"created": "Stored", "superseded": "Stored", "reinforced": "Reinforced",
            "challenged": "Recorded evidence against"}  # what `beliefs set` did, by its answer's action


def belief_line(result: dict) -> str:
    """What `beliefs set` stored, in one line: what it did, the belief's short id (every door
    takes it), its confidence and state, its text (inert), and what it replaced."""
    from ._browse import inert

    b, done = result["belief"], SET_SAYS.get(result["action"], result["action"].capitalize())
    replaced = "".join(f"; it replaces {shown_id(i)[:8]}" for i in result.get("superseded_ids", ()) if i != result["id"])
    return (f"{done} belief {shown_id(result['id'])[:8]} (confidence {b['confidence']:.2f}, "
            f"{b['state']}): {inert(b['text'], 160)}{replaced}")


def cmd_graph(args) -> int:
    if args.action == "rebuild":
        result = _run(args, lambda s: s.upkeep.rebuild_graph(args.scope))
    else:
        modes = {"search": {"query": getattr(args, "query", None)},
                 "entity": {"entity_id": stored_id(getattr(args, "entity_id", None))},
                 "path": {"source_id": stored_id(getattr(args, "source_id", None)),
                          "target_id": stored_id(getattr(args, "target_id", None))}}[args.action]
        result = _run(args, lambda s: s.graph_search(args.scope, max_depth=getattr(args, "max_depth", 4),
                                                     limit=args.limit, **modes))
    _print(result, args)
    return 0


def cmd_route(args) -> int:
    _print(_run(args, lambda s: s.route(args.scope, args.query, args.limit), vectors=True), args)
    return 0


def cmd_audit(args) -> int:
    result = _run(args, lambda s: s.upkeep.audit(args.type, args.scope))
    if args.json:
        _print(result, args)
    else:
        for check, count in result["counts"].items():
            print(f"{'ok  ' if not count else 'FAIL'} {check}: {count}")
            for finding in result["findings"].get(check, [])[:10]:
                print(f"       {json.dumps(public_ids(finding), ensure_ascii=False, default=str)[:200]}")
        for scope in result["forgetting"]:
            print(f"wait forget --all of {scope!r} in progress: its rows are checked once it finishes")
    return 0 if result["ok"] else FOUND_EXIT


def cmd_reindex(args) -> int:
    args.drain = True
    bar = VectorBar(args)
    try:
        result = _run(args, lambda s: s.upkeep.reindex(args.scope, progress=bar, claim=args.claim), **storing_only(args))
    finally:
        bar.close()
    _print(result, args)
    return 0


def cmd_metrics(args) -> int:
    sys.stdout.write(_run(args, lambda s: s.upkeep.exposition()))
    return 0


def register(add: Callable) -> None:
    """Add the knowledge commands with `add(name, func, help)` from cli.build_parser."""
    p = add("learn", cmd_learn, "Learn facts, preferences, decisions, skills and beliefs from a text.")
    p.add_argument("text", nargs="?", help="The text, or '-' to read standard input.")
    p.add_argument("--file", help="Read the text from this file.")
    p.add_argument("--scope", default=OWNER, help=SCOPE_HELP)
    p.add_argument("--source", help="Where the text came from (its receipt).")
    p.add_argument("--no-beliefs", action="store_true", help="Do not store opinions as beliefs.")
    p.add_argument("--json", action="store_true")
    may_create(p)
    _add_beliefs(add)
    _add_graph(add)
    p = add("route", cmd_route, "Answer a question through the 4-stage router; shows which stage answered.")
    p.add_argument("query")
    p.add_argument("--scope", default=OWNER, help=SCOPE_HELP)
    p.add_argument("--limit", type=int, default=5)
    p = add("audit", cmd_audit, "Check the stored data: orphans, receipts, lifecycle, confidence, drift. "
                                "Exits 3 when something is found.")
    p.add_argument("type", nargs="?", default="all",
                   help=_either(AUDIT_CHOICES))
    p.add_argument("--scope", help="Only this scope (default: every scope).")
    p.add_argument("--json", action="store_true")
    p = add("reindex", cmd_reindex, "Repair drift: rebuild missing vectors, drop stray ones and orphans, "
                                    "rebuild the entity graph from SQL.")
    p.add_argument("--scope", help="Only this scope (default: every scope).")
    p.add_argument("--claim", action="store_true",
                   help="Make the Chroma server's database this store's, though it names another store: "
                        "only when this store replaces that one (restored by import).")
    p.add_argument("--quiet", "-q", action="store_true", help="No progress bar.")
    add("metrics", cmd_metrics, "Print the Prometheus metrics (store gauges; call counters are per process).")


def _add_beliefs(add: Callable) -> None:
    p = add("beliefs", cmd_beliefs, "List, set, resolve and reflect on beliefs.")
    actions = p.add_subparsers(dest="action", required=True)
    q = _action(actions, "list", "Beliefs, filtered.")
    q.add_argument("--text", help="Beliefs about this, best first.")
    q.add_argument("--state", help="candidate, validated, active, stale, archived, superseded, contested, "
                                   "or all (the default: any state).")
    q.add_argument("--min-confidence", type=float)
    q.add_argument("--tag", action="append")
    q.add_argument("--source")
    q.add_argument("--limit", type=int, default=20)
    q.add_argument("--json", action="store_true")
    q = _action(actions, "set", "Create, reinforce or supersede a belief.")
    q.add_argument("text")
    q.add_argument("--confidence", type=float)
    q.add_argument("--evidence", help="A note on why.")
    q.add_argument("--supersedes", help="The id of a belief it replaces.")
    q.add_argument("--json", action="store_true", help="The whole answer as JSON (the belief, its receipt).")
    may_create(q)
    q = _action(actions, "resolve", "Settle two contradicting beliefs.")
    q.add_argument("belief_a")
    q.add_argument("belief_b")
    q.add_argument("--strategy", required=True, help=_either(STRATEGIES) + ".")
    q.add_argument("--merged-text")
    q = _action(actions, "reflect", "A report on the beliefs.")
    q.add_argument("mode", nargs="?", default="overview",
                   help=_either(REFLECT_MODES))


def _either(choices) -> str:
    """Choices as a help text says them: "a, b or c"."""
    return f"{', '.join(choices[:-1])} or {choices[-1]}"


def _add_graph(add: Callable) -> None:
    p = add("graph", cmd_graph, "Search the entity graph, or rebuild it from the stored facts.")
    actions = p.add_subparsers(dest="action", required=True)
    _action(actions, "search", "Entities named in a text, with neighbours.", limit=True).add_argument("query")
    _action(actions, "entity", "One entity and its neighbours.", limit=True).add_argument("entity_id")
    q = _action(actions, "path", "Paths between two entities.", limit=True)
    q.add_argument("source_id")
    q.add_argument("target_id")
    q.add_argument("--max-depth", type=int, default=4, help="Longest path in hops (1-4).")
    _action(actions, "rebuild", "Rebuild the scope's graph from the facts in SQL.")


def _action(actions, name: str, help_text: str, limit: bool = False):
    """A sub-command with the options every knowledge sub-command takes."""
    q = actions.add_parser(name, help=help_text, description=help_text)
    q.add_argument("--scope", default=OWNER, help=SCOPE_HELP)
    q.add_argument("--hermes-home", default=argparse.SUPPRESS,  # given here or before the action
                   help="Hermes home directory (default: $HERMES_HOME or ~/.hermes)")
    if limit:
        q.add_argument("--limit", type=int, default=20)
    return q
