"""The steering commands of `hermes-cmms`: edit, pin, unpin, tag, and the preview and question
`forget ID...` asks before it forgets."""
from __future__ import annotations

import argparse
import json
import sys
from typing import Callable

from ..common.errors import InvalidInput
from ..common.ids import public_ids, shown_id, stored_id
from ._engine import OWNER, SCOPE_HELP, _service, owner_default

SHOWN_CHARS = 160  # of a memory's text, what the preview shows on its line
COUNTED = (("facts", "fact"), ("beliefs", "belief row"), ("evidence", "piece of evidence", "pieces of evidence"),
           ("links", "link"), ("relations", "graph relation"), ("entities", "graph entity", "graph entities"),
           ("vectors", "memory's vectors", "memories' vectors"), ("recalls", "line of recall history", "lines of recall history"),
           ("snapshots", "audit snapshot kept", "audit snapshots kept"))


def inert(text: str, limit: int = SHOWN_CHARS) -> str:
    """A stored text as one inert terminal line: every character that is not printable (line
    breaks, escape sequences, bidi overrides, zero-width marks) written as its \\u code."""
    shown = "".join(ch if ch.isprintable() else f"\\u{ord(ch):04x}" for ch in text[:limit])
    return shown + ("…" if len(text) > limit else "")


def _actor(args) -> str:
    return f"cli:{args.actor}" if getattr(args, "actor", None) else "cli"


def _run(args, work: Callable, drain: float = 0.0):
    """Open the engine, do one thing, close it (waiting `drain` seconds for the vector index)."""
    service = _service(args)
    try:
        return work(service)
    finally:
        service.close(drain_timeout=drain)


def cmd_edit(args) -> int:
    text = sys.stdin.buffer.read().decode("utf-8", "replace") if args.text == "-" else args.text
    new = _run(args, lambda s: s.correct(args.scope, stored_id(args.id), text, actor=_actor(args)), drain=30.0)
    if args.json:
        print(json.dumps(public_ids({"id": new, "supersedes": stored_id(args.id)})))
    else:
        print(f"Corrected {args.id}: the new text is memory {shown_id(new)}, which supersedes it.")
    return 0


def cmd_pin(args) -> int:
    pinned = args.pinned
    _run(args, lambda s: s.pin(args.scope, stored_id(args.id), pinned, actor=_actor(args)))
    print(f"Pinned {args.id}: it never decays, expires or is consolidated." if pinned else
          f"Unpinned {args.id}: it ages like any other memory.")
    return 0


def tag_changes(changes: list[str]) -> tuple[list[str], list[str]]:
    """(added, removed) of `+TAG` / `-TAG` words."""
    add, remove = [], []
    for change in changes:
        if len(change) < 2 or change[0] not in "+-":
            raise InvalidInput(f"Each tag change is +TAG to add or -TAG to remove, not {inert(change, 60)!r}.")
        (add if change[0] == "+" else remove).append(change[1:])
    return add, remove


AFTER_ID = {"--scope": "scope", "--actor": "actor", "--hermes-home": "hermes_home"}  # options `tag` reads after its id


def _options_after_id(args) -> list[str]:
    """`tag`'s words after the id but its options (--scope S, --actor A, --hermes-home H,
    --json, also as --name=value), which set `args`: the tag changes, in order."""
    changes, words = [], list(args.changes)
    if getattr(args, "owner_scoped", False):  # the default, worked out again below: the home may follow
        args.scope = OWNER
    while words:
        word = words.pop(0)
        name, has_value, value = word.partition("=")
        if name in AFTER_ID:
            if not has_value and not words:
                raise InvalidInput(f"{name} needs a value.")
            setattr(args, AFTER_ID[name], value if has_value else words.pop(0))
        elif word == "--json":
            args.json = True
        elif word.startswith("--"):
            raise InvalidInput(f"tag takes --scope, --actor, --hermes-home and --json; {inert(word, 60)!r} is not one of them.")
        else:
            changes.append(word)
    owner_default(args)
    return changes


def cmd_tag(args) -> int:
    add, remove = tag_changes(_options_after_id(args))
    tags = _run(args, lambda s: s.tag(args.scope, stored_id(args.id), add, remove, actor=_actor(args)))
    if args.json:
        print(json.dumps({"id": shown_id(stored_id(args.id)), "tags": tags}, ensure_ascii=False))
    else:
        print(f"Tags of {args.id}: {', '.join(inert(t, 60) for t in tags) or '(none)'}.")
    return 0


def show_preview(preview: dict, scope: str) -> None:
    """What `forget ID...` will delete, one memory a line, then what goes with them."""
    shown = public_ids(preview)
    print(f"Forgetting from scope {inert(scope, 80)!r}:")
    for m in shown["memories"]:
        print(f"  {m['id']}  {m['kind']:<11} {inert(m['content'])}")
    for m in shown["cascaded"]:
        print(f"  {m['id']}  {m['kind']:<11} {inert(m['content'])}  ({m['reason']})")
    counts = [f"{preview[key]} {names[0] if preview[key] == 1 else (names[1] if len(names) > 1 else names[0] + 's')}"
              for key, *names in COUNTED if preview[key]]
    if counts:
        print(f"With them go: {', '.join(counts)}.")
    if preview["restored"]:
        print(f"{preview['restored']} memor{'y' if preview['restored'] == 1 else 'ies'} they had replaced "
              "become current again.")


def confirmed(service, scope: str, ids: list[str], yes: bool) -> bool:
    """Show the preview of forgetting `ids`, then ask (unless `yes`); InvalidInput when nobody
    can be asked (standard input is not a terminal) and --yes was not given."""
    preview = service.forget_preview(scope, ids)
    show_preview(preview, scope)
    if yes:
        return True
    if not sys.stdin.isatty():
        raise InvalidInput("Standard input is not a terminal, so nobody can confirm: add --yes to forget "
                           "without being asked; nothing was forgotten.")
    count = len(preview["memories"]) + len(preview["cascaded"])
    answer = input(f"Forget {'this memory' if count == 1 else f'these {count} memories'}? [y/N] ")
    return answer.strip().lower() in ("y", "yes")


def register(add: Callable[..., argparse.ArgumentParser]) -> None:
    """Add the steering commands to the `hermes-cmms` parser (`add` as in build_parser)."""
    def common(p: argparse.ArgumentParser, json_out: bool = True) -> None:
        p.add_argument("--scope", default=OWNER, help=SCOPE_HELP)
        p.add_argument("--actor", help="Who asked (recorded on the audit trail, as cli:ACTOR).")
        if json_out:
            p.add_argument("--json", action="store_true")

    p = add("edit", cmd_edit, "Correct a memory: the new text is stored as a memory that supersedes it "
                              "(the old one stays in its history and is never recalled again).")
    p.add_argument("id", metavar="ID", help="The memory to correct.")
    p.add_argument("text", metavar="TEXT", help="The corrected text ('-': read it from standard input).")
    common(p)
    for name, what in (("pin", "Pin a memory: it never decays, expires or is consolidated."),
                       ("unpin", "Unpin a memory: it ages like any other again.")):
        p = add(name, cmd_pin, what)
        p.set_defaults(pinned=name == "pin")  # (a default, not the command's name: `hermes cmms` names it otherwise)
        p.add_argument("id", metavar="ID")
        common(p, json_out=False)
    p = add("tag", cmd_tag, "Add (+TAG) and remove (-TAG) tags of a memory; options go before the id.")
    common(p)
    p.add_argument("id", metavar="ID")
    p.add_argument("changes", nargs=argparse.REMAINDER, metavar="+TAG/-TAG", help="e.g. +work -draft")
