"""The CMMS 0.11 contracts' shapes (docs/contracts/cmms-0.11), made here from the verbs' answers:
a fact as `fact_response`, a decision as get_context shows it, `learn`'s buckets of receipts,
`route`'s four stages, the graph's nodes, edges and paths. The engine answers in its own terms;
only this door speaks the contract's."""
from __future__ import annotations

from typing import Optional

from hermes_cmms.common.answers import Item, iso, receipt_response


def fact_response(item: Item) -> dict:
    """A stored fact as the contract's `fact_response`: its id, subject, predicate, object,
    confidence, receipt (`source`) and times."""
    subject, predicate, obj = item.fact or ("", "", item.content)
    return {"id": item.id, "subject": subject, "predicate": predicate, "object": obj,
            "confidence": item.confidence, "source": item.source,
            "created_at": iso(item.created_at), "updated_at": iso(item.updated_at)}


DECISION_PARTS = ("choice", "context", "reason")  # a learned decision's parts (Item.detail) shown


def decision_response(item: Item) -> dict:
    """A stored decision as get_context shows it: its id, text, the parts it was learned with
    (choice, context, reason: those known), receipt, confidence and time."""
    parts = item.detail
    return {"id": item.id, "content": item.content,
            **{name: parts[name] for name in DECISION_PARTS if isinstance(parts.get(name), str) and parts[name]},
            "source": item.source, "confidence": item.confidence, "created_at": iso(item.created_at)}


BUCKETS = {"fact": "facts", "preference": "preferences", "decision": "decisions", "skill": "skills",
           "belief": "beliefs"}
MAX_CONTEXT_CHARS = 1000  # a learned decision's context: the text it was learned from, cut here


def learn_answer(service, scope: str, text: str, answer: dict, created_by: str) -> dict:
    """A `learn` answer as the CMMS contract's: `facts`, `decisions` and `skills` as
    [{receipt, item}] (a fact as fact_response; a decision's `context` is the text it was
    learned from), `beliefs` as [{belief, extracted, reinforced}], and every receipt of these
    under `receipts`; beside them our `preferences` bucket (the contract has none: its receipts
    name memory_type "preference" and are not under `receipts`) and the answer itself. The
    `belief` of a learned item moves to the `beliefs` bucket."""
    learned = answer["learned"]
    stored = service.get(scope, [item["id"] for item in learned])  # with their facts' parts
    shown: dict = {bucket: [] for bucket in ("facts", "decisions", "skills", "beliefs", "receipts", "preferences")}
    for item in learned:
        memory = stored.get(item["id"])
        if memory is None:  # forgotten since (a concurrent forget): nothing to show
            continue
        receipt = receipt_response(memory, item["kind"], created_by)
        if item["kind"] == "belief":
            belief = item["belief"]
            shown["beliefs"].append({"belief": {**belief, "proposition": belief["text"]},
                                     "extracted": dict(item["parts"]), "reinforced": item["reinforced"],
                                     "receipt": receipt})
        else:
            shown[BUCKETS[item["kind"]]].append({"receipt": receipt, "item": _item(memory, item, text)})
        if item["kind"] != "preference":
            shown["receipts"].append(receipt)
    plain = [{k: v for k, v in item.items() if k != "belief"} for item in learned]
    return {**shown, **answer, "learned": plain}


def _item(memory: Item, item: dict, text: str) -> dict:
    """The contract's item of a learned fact, decision or skill (a preference: its parts)."""
    parts, created = item["parts"], iso(memory.created_at)
    if item["kind"] == "fact":
        return fact_response(memory)
    common = {"id": memory.id, "source": memory.source, "created_at": created}
    if item["kind"] == "decision":
        return {**common, "context": text[:MAX_CONTEXT_CHARS], "choice": parts["choice"],
                "reason": parts.get("reason") or "", "content": memory.content}
    if item["kind"] == "skill":
        return {**common, "purpose": parts["purpose"], "steps": list(parts["steps"]), "name": parts["purpose"],
                "content": memory.content}
    return {**common, **parts, "content": memory.content}


STAGES = {"rules": (1, "rules"), "semantic": (2, "semantic"), "graph": (3, "graph")}  # else 4, llm_fallback
PAYLOAD_KEYS = ("content", "subject", "predicate", "object", "source", "kind", "tier", "confidence", "state",
                "created_at", "detail")


def route_answer(answer: dict) -> dict:
    """A `route` answer as one of the CMMS contract's four stages: `stage` (1-4) and `route`
    (rules, semantic, graph, llm_fallback) with the stage's own fields: `rule_match` {route,
    rule_name, matched_keyword}, `semantic_results` [{id, score 0..1, payload}] with `total`,
    `graph_result` {entities, relations, paths}, or a `message`. Our names stay beside them:
    `stage_name` (rules, semantic, graph, llm, none) and `retriever` (what the results were
    read with), with `answered`, `reason`, `results`, `trace` and `query`. The LLM's choice
    and the hybrid-search fallback are both stage 4: no stage of the first three answered."""
    number, name = STAGES.get(answer["stage"], (4, "llm_fallback"))
    shown = {"stage": number, "route": name}
    if number == 1:
        shown["rule_match"] = {"route": answer["route"], "rule_name": answer["rule"],
                               "matched_keyword": answer["matched"]}
    elif number == 2:
        shown["semantic_results"] = [
            {"id": r["id"], "score": min(1.0, max(0.0, r["score"])),
             "payload": {"memory_type": r["kind"], **{k: r[k] for k in PAYLOAD_KEYS if k in r}}}
            for r in answer["results"]]
        shown["total"] = len(shown["semantic_results"])
    elif number == 3:
        view = graph_view({"entities": answer["results"]})
        shown["graph_result"] = {"entities": view["nodes"], "relations": view["edges"], "paths": view["paths"]}
    else:
        shown["message"] = answer["reason"]
    rest = {k: v for k, v in answer.items() if k not in ("stage", "route", "rule", "matched")}
    return {**shown, "stage_name": answer["stage"], "retriever": answer["route"], **rest}


def graph_view(answer: dict) -> dict:
    """A graph answer (`search`'s, or a list of described entities under `entities`) as the
    CMMS contract's nodes, edges and paths: each entity once (type "entity": entities have no
    types here; its degree as an attribute), each relation once from its source to its target
    (its predicate as the relation, its fact's memory id and currency as attributes), and each
    path as the entities along it."""
    nodes: dict[str, dict] = {}
    edges: dict[tuple, dict] = {}

    def node(entity: dict, degree: Optional[int] = None) -> None:
        shown = nodes.setdefault(entity["id"], {"id": entity["id"], "name": entity["name"], "type": "entity",
                                                "attributes": {}})
        if degree is not None:
            shown["attributes"]["degree"] = degree

    def edge(source: str, target: str, predicate: str, memory_id: str, current: bool) -> None:
        edges.setdefault((source, target, predicate, memory_id), {
            "source_id": source, "target_id": target, "relation": predicate,
            "attributes": {"memory_id": memory_id, "current": current}})

    described = answer.get("entities") or ([answer["entity"]] if "entity" in answer else [])
    for entity in described:
        node(entity, entity.get("degree"))
        for n in entity.get("neighbours", ()):
            node(n["entity"])
            ends = (entity["id"], n["entity"]["id"]) if n["forward"] else (n["entity"]["id"], entity["id"])
            edge(*ends, n["predicate"], n["memory_id"], n["current"])
    paths = []
    for path in answer.get("path_steps", ()):
        steps = path["steps"]
        for step in steps:
            node(step["from"]), node(step["to"])
            ends = (step["from"]["id"], step["to"]["id"])
            edge(*(ends if step["forward"] else ends[::-1]), step["predicate"], step["memory_id"], step["current"])
        along = [steps[0]["from"]] + [step["to"] for step in steps] if steps else []
        paths.append([{"id": e["id"], "name": e["name"], "type": "entity"} for e in along])
    return {"nodes": list(nodes.values()), "edges": list(edges.values()), "paths": paths}
