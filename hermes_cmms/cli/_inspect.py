"""`hermes-cmms inspect`: the block a prompt would get, each line with why it is there."""
from __future__ import annotations

import json
from typing import Callable

from ..common.bounds import query_text
from ..common.ids import public_ids, shown_id, stored_id
from ._engine import OWNER, SCOPE_HELP, _service



def cmd_inspect(args) -> int:
    prompt = query_text(args.prompt)
    service = _service(args, vectors=True)  # (the block is ranked by meaning too, as in a turn)
    try:
        result = service.inspect_recall(args.scope, prompt, budget_tokens=args.budget,
                                        why_not=stored_id(args.why_not) if args.why_not else None,
                                        leave_out=[stored_id(i) for i in getattr(args, "leave_out", None) or ()])
    finally:
        service.close(drain_timeout=0)
    if args.json:
        print(json.dumps(public_ids(result), indent=2, ensure_ascii=False))
        return 0
    print(f"The block: {len(result['lines'])} line(s), {result['tokens']} of {result['budget_tokens']} tokens.")
    if result["left_out"] or result["not_left_out"]:
        print(f"Left out: {len(result['left_out'])} memory(ies)" + (
            f"; {result['not_left_out']} id(s) given are no memory of this scope." if result["not_left_out"] else "."))
    for line in result["lines"]:
        print(f"{line['rank']:>3}. {line['text']}")
        print(f"     {_why(line)}")
    if result["next"]:
        print("Ranked next, but did not fit:")
        for line in result["next"]:
            print(f"     {line['text']}")
            print(f"     {_why(line)}")
    if args.why_not:
        print(f"Why not {shown_id(result['why_not']['memory_id'])}: {result['why_not']['verdict']}")
    return 0


def _why(line: dict) -> str:
    """One line: where it ranked, which rankings found it, the fused score and the nudges."""
    found = ", ".join(f"{name} #{rank}" for name, rank in line["found_by"].items()) or "no ranking"
    nudges = line["nudges"]
    parts = [f"recency +{nudges.get('recency', 0):.4f}", f"confidence x{nudges.get('confidence', 1):.2f}"]
    parts += [f"{name.replace('_', ' ')} x{nudges[name]:.2g}" for name in ("speaker", "time_words", "few_words", "vector_weight")
              if nudges.get(name, 1.0) != 1.0]
    if nudges.get("neighbour"):
        parts.append(f"neighbour +{nudges['neighbour']:.4f}")
    return (f"{shown_id(line['memory_id'])}  ranked #{line['position']}; found by {found}; "
            f"fused {line['fused']:.4f}; {', '.join(parts)}; score {line['score']:.4f}")


def register(add: Callable) -> None:
    p = add("inspect", cmd_inspect, "Show the block a prompt would recall, each line with why it is there.")
    p.add_argument("prompt")
    p.add_argument("--scope", default=OWNER, help=SCOPE_HELP)
    p.add_argument("--budget", type=int, help="Token budget (default: the recall_tokens setting).")
    p.add_argument("--why-not", metavar="ID", help="Also say why this memory is or is not in the block.")
    p.add_argument("--leave-out", action="append", metavar="ID",
                   help="Never make this memory a line (repeatable): a past turn's own stored messages, when its "
                        "prompt is run again now (it did not exist when the turn was recalled).")
    p.add_argument("--json", action="store_true")
