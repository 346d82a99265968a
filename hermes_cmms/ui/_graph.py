"""The entity graph drawn on the server: a graph_search answer as positions for an inline SVG
(entities on a circle, relations as lines between them). Labels stay text for the template to
escape; nothing here is markup."""
from __future__ import annotations

import math

SIZE, RADIUS, MOST = 640, 250, 60  # the picture's side, the circle's radius, entities drawn at most


def draw(answer: dict) -> dict:
    """{"size", "nodes": [{id, name, x, y}], "edges": [{x1, y1, x2, y2, lx, ly, label, current}]}."""
    names, relations = _collect(answer)
    ids = list(names)[:MOST]
    centre, step = SIZE / 2, 2 * math.pi / max(len(ids), 1)
    place = {i: (round(centre + (RADIUS if len(ids) > 1 else 0) * math.cos(n * step - math.pi / 2), 1),
                 round(centre + (RADIUS if len(ids) > 1 else 0) * math.sin(n * step - math.pi / 2), 1))
             for n, i in enumerate(ids)}
    nodes = [{"id": i, "name": names[i], "x": place[i][0], "y": place[i][1]} for i in ids]
    edges = [{"x1": place[a][0], "y1": place[a][1], "x2": place[b][0], "y2": place[b][1],
              "lx": round((place[a][0] + place[b][0]) / 2, 1), "ly": round((place[a][1] + place[b][1]) / 2, 1),
              "label": label, "current": current}
             for a, b, label, current in relations if a in place and b in place]
    return {"size": SIZE, "nodes": nodes, "edges": edges}


def _collect(answer: dict) -> tuple[dict, list]:
    """The entities (id -> name) and relations (from, to, predicate, current) of an answer."""
    names: dict[str, str] = {}
    relations: list[tuple] = []
    entities = answer.get("entities") or ([answer["entity"]] if answer.get("entity") else [])
    for entity in entities:
        names.setdefault(entity["id"], entity["name"])
        for near in entity.get("neighbours", []):
            other = near["entity"]
            names.setdefault(other["id"], other["name"])
            ends = (entity["id"], other["id"]) if near.get("forward", True) else (other["id"], entity["id"])
            relations.append((*ends, near.get("predicate", ""), near.get("current", True)))
    for path in answer.get("path_steps", []):
        for step in path["steps"]:
            for end in (step["from"], step["to"]):
                names.setdefault(end["id"], end["name"])
            ends = (step["from"]["id"], step["to"]["id"])
            relations.append((*(ends if step.get("forward", True) else ends[::-1]), step["predicate"], step["current"]))
    return names, list(dict.fromkeys(relations))
