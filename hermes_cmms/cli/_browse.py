"""The browsing commands of `hermes-cmms`: `list` (a filtered, sorted page of a scope's
memories) and `show ID` (a memory's page as text). Every stored string is printed inert."""
from __future__ import annotations

import json
from typing import Callable, Optional

from ..common.errors import UnknownMemory
from ..common.ids import given_back, public_ids, shown_id, stored_id
from ..common.vocabulary import SORTS, STATES, TIERS
from ._engine import OWNER, SCOPE_HELP, _service

LINE_CHARS = 160  # of a memory's text, what `list` shows on its line


def inert(text: Optional[str], limit: Optional[int] = None) -> str:
    """A stored text as inert terminal text: every character that is not printable (escape
    sequences, bidi overrides, zero-width marks; line breaks too when cut to one line) written
    as its \\u code, so nothing stored can move the cursor, recolour or reorder the screen."""
    text = text or ""
    cut = text[:limit] if limit else text
    shown = "".join(ch if ch.isprintable() or (ch == "\n" and not limit) else f"\\u{ord(ch):04x}" for ch in cut)
    return shown + ("…" if limit and len(text) > limit else "")


def marks(memory: dict) -> str:
    """What a line says of a memory's state beyond its lifecycle: superseded, expired, pinned."""
    said = ["superseded"] if memory.get("superseded_by") else []
    said += ["pinned"] if memory.get("pinned") else []
    return f"({', '.join(said)}) " if said else ""


def cmd_list(args) -> int:
    service = _service(args, vectors=args.meaning)
    try:
        page = service.browse(args.scope, tier=args.tier, kind=args.kind, tags=args.tag or (), state=args.state,
                              since=args.since, until=args.until, source=args.source, query=args.query,
                              mode="meaning" if args.meaning else "keyword", sort=args.sort, offset=args.offset,
                              limit=args.limit)
    finally:
        service.close(drain_timeout=0)
    if args.json:
        print(json.dumps(public_ids(page), indent=2, ensure_ascii=False))
        return 0
    if page.get("notice"):
        print(page["notice"])
    for item in page["items"]:
        print(f"{shown_id(item['id'])}  {item['created_at'][:10]}  {item['tier']:<8} {inert(item['kind'], 12):<11} "
              f"{marks(item)}{inert(item['content'], LINE_CHARS)}")
    _page_line(args, page)
    if page.get("below_floor"):
        print(f"{page['below_floor']} more of the nearest are below cosine 0.2 from the query: no match by meaning.")
    if page.get("vectors_pending"):
        print(f"{page['vectors_pending']} memories of this scope wait for the vector index: a search by meaning "
              "finds them once they are indexed (hermes-cmms status --vectors says how far it is).")
    return 0


def _page_line(args, page: dict) -> None:
    shown, total = len(page["items"]), page["total"]
    if not total:
        print(f"No memories match in scope {inert(args.scope, 200)!r}.")
    elif shown:
        last = page["offset"] + shown
        more = f"; next: --offset {last}" if last < total else ""
        print(f"{page['offset'] + 1}-{last} of {total}{more}")
    else:
        print(f"{total} match; none from --offset {page['offset']}.")


def cmd_show(args) -> int:
    service = _service(args)
    try:
        page = service.memory_page(args.scope, stored_id(args.id))
    except UnknownMemory as exc:  # the id as the user gave it
        raise UnknownMemory(given_back(str(exc), {stored_id(args.id): args.id})) from None
    finally:
        service.close(drain_timeout=0)
    if args.json:
        print(json.dumps(public_ids(page), indent=2, ensure_ascii=False))
        return 0
    for section in (_memory, _provenance, _confidence, _chains, _knowledge, _audit):
        lines = section(page)
        print("\n".join(lines) + "\n" if lines else "", end="")
    return 0


def _memory(page: dict) -> list[str]:
    m = page["memory"]
    state = m["state"] + (f", superseded by {shown_id(m['superseded_by'])}" if m["superseded_by"] else "")
    state += ", pinned" if m.get("pinned") else ""
    tags = f"  tags: {', '.join(inert(t, 80) for t in m['tags'])}" if m["tags"] else ""
    return [f"Memory {shown_id(m['id'])}  ({inert(m['kind'], 40)}, {m['tier']}, {state}){tags}",
            *("  " + line for line in inert(m["content"]).split("\n")), ""]


def _provenance(page: dict) -> list[str]:
    p = page["provenance"]
    where = f"  session {inert(p['session_id'], 120)} turn {p['turn']}" if p["session_id"] else ""
    lines = ["Provenance", f"  receipt: {inert(p['source'], 200) or '-'}  door: {inert(p['door'], 60) or '-'}{where}",
             f"  written {p['created_at']}, updated {p['updated_at']}, reinforced {p['reinforcements']} times"]
    lines += [f"    repeated by {inert(r.get('source'), 200)}{_when(r.get('at'))}" for r in p["receipts"]]
    return lines + [""]


def _when(at) -> str:
    """" at <time>" for a receipt that has one (an import's receipt has none), shown inert."""
    return "" if at in (None, "") else f" at {inert(str(at), 40)}"


def _confidence(page: dict) -> list[str]:
    c = page["confidence"]
    after = c["after_decay"]
    return ["Confidence", f"  now {c['now']}, reliability {c['reliability']}, last seen {c['last_seen_at']}",
            f"  decay now would make it {after['confidence']} ({after['state']})"
            + (": pinned, it never decays" if c["pinned"] else f"; half-life {c['ttl_days']} days, "
               f"never below {c['decay_floor']:.0%} of its corroborated value"), ""]


def _chains(page: dict) -> list[str]:
    lines = []
    for title, chain in (("Supersedes", page["supersedes"]), ("Superseded by", page["superseded_by"])):
        if chain:
            lines += [title, *(f"  {shown_id(m['id'])}  {m['created_at'][:10]}  {inert(m['content'], LINE_CHARS)}"
                               for m in chain), ""]
    return lines


def _knowledge(page: dict) -> list[str]:
    lines = []
    if page["fact"]:
        f = page["fact"]
        lines += [f"Fact: {inert(f['subject'], 200)} | {inert(f['predicate'], 200)} | {inert(f['object'], 200)}"]
    for title, key in (("Learned from", "learned_from"), ("Learned into", "learned_into"),
                       ("Evidence for the beliefs", "evidence_for")):
        lines += [title, *(f"  {shown_id(m['id'])}  {inert(m['content'], LINE_CHARS)}" for m in page[key])] \
            if page[key] else []
    if page["belief"]:
        lines += [f"Belief with {len(page['belief']['evidence'])} pieces of evidence"]
    names = {n["id"]: inert(n["name"], 120) for n in page["entities"]["nodes"]}
    lines += [f"Graph: {names.get(e['source_id'], '?')} -{inert(e['predicate'], 120)}-> {names.get(e['target_id'], '?')}"
              for e in page["entities"]["edges"]]
    return lines + [""] if lines else []


def _audit(page: dict) -> list[str]:
    return ["Audit", *(f"  {e['at']}  {e['action']:<11} {inert(e['actor'], 80) or '-'}  "
                       + inert(" ".join(f"{k}={v}" for k, v in e["detail"].items()), 200) for e in page["audit"])]


def register(add: Callable) -> None:
    """Add `list` and `show` to the command line (`add` from commands.build_parser)."""
    p = add("list", cmd_list, "List a scope's memories: filtered, sorted, a page at a time.")
    p.add_argument("--scope", default=OWNER, help=SCOPE_HELP)
    p.add_argument("--tier", choices=TIERS)
    p.add_argument("--kind", help="message, observation, note, summary, fact, preference, decision, skill, belief, ...")
    p.add_argument("--tag", action="append", help="Memories carrying this tag (repeatable: all must match).")
    p.add_argument("--state", choices=STATES, default="active",
                   help="active (default: neither superseded nor expired), superseded, expired, all, "
                        "or a lifecycle state of the active ones")
    p.add_argument("--since", help="Written on or after this date or time (ISO 8601, UTC unless it says).")
    p.add_argument("--until", help="Written before this time, or on or before this date.")
    p.add_argument("--source", help="Receipt prefix: hermes, mcp, cli, import:, ...")
    p.add_argument("--query", "-q", help="Only memories holding any of these words (or near it in meaning).")
    p.add_argument("--meaning", action="store_true", help="With --query: by meaning (loads the embedder).")
    p.add_argument("--sort", choices=SORTS, default="newest")
    p.add_argument("--offset", type=int, default=0)
    p.add_argument("--limit", type=int, default=20, help="1 to 200 (default 20).")
    p.add_argument("--json", action="store_true")
    p = add("show", cmd_show, "Show one memory whole: provenance, confidence and decay, what it superseded "
                              "or was superseded by, what was learned from it, its audit events.")
    p.add_argument("id", metavar="ID")
    p.add_argument("--scope", default=OWNER, help=SCOPE_HELP)
    p.add_argument("--json", action="store_true")
