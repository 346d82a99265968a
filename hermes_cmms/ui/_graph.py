"""The entity graph drawn on the server: a graph_search answer as positions for an inline SVG.
One entity searched for stands in the middle with its neighbours around it; several are on a
circle; the paths between two entities run left to right, a column a hop. Each relation is an
arrow from its subject to its object that stops at the circles' edges, its label beside its
middle. Labels stay text for the template to escape; nothing here is markup."""
from __future__ import annotations

import math

WIDTH, HEIGHT, MOST = 960, 620, 60  # the picture's size, the entities drawn at most
RX, RY = 260, 230  # the ellipse the entities stand on (wider than tall: their names run sideways)
NODE = 9  # a node's radius: an arrow stops this far (and a little more) from a node's centre
PATH_WIDTH, PATH_ROW = 900, 90  # the paths' picture: its width, the height a path takes


def draw(answer: dict) -> dict:
    """{"width", "height", "nodes": [{id, name, x, y, centre, tx, ty, anchor}], "edges": [{x1, y1, x2, y2, lx, ly, label, current}]}."""
    names, relations = _collect(answer)
    ids = list(names)[:MOST]
    if answer.get("path_steps"):
        width, height, place = _columns(answer, ids)
    else:
        width, height, place = WIDTH, HEIGHT, _star(answer, ids)
    centre = _centre(answer)
    middle = (width / 2, height / 2) if not answer.get("path_steps") else None
    nodes = [{"id": i, "name": names[i], "x": place[i][0], "y": place[i][1], "centre": i == centre,
              **_label(place[i], middle, i == centre)} for i in ids]
    edges = [_arrow(place[a], place[b], label, current) for a, b, label, current in relations
             if a in place and b in place and a != b]
    return {"width": width, "height": height, "nodes": nodes, "edges": edges}


def _label(at: tuple, middle, centre: bool) -> dict:
    """Where a node's name goes: away from the middle of the picture (so the arrows that come in
    from the middle do not run through it), above the centre, below a node of a path."""
    x, y = at
    if centre or middle is None or (x, y) == middle:
        return {"tx": x, "ty": round(y - 20, 1) if centre else round(y + 28, 1), "anchor": "middle"}
    length = math.hypot(x - middle[0], y - middle[1]) or 1.0
    ux, uy = (x - middle[0]) / length, (y - middle[1]) / length
    if abs(ux) < 0.35:
        return {"tx": x, "ty": round(y + (30 if uy > 0 else -18), 1), "anchor": "middle"}
    return {"tx": round(x + 16 * (1 if ux > 0 else -1), 1), "ty": round(y + 5 + 10 * uy, 1),
            "anchor": "start" if ux > 0 else "end"}


def _centre(answer: dict):
    """The entity the picture is about: the one asked for, or the only one a query found."""
    if answer.get("entity"):
        return answer["entity"]["id"]
    found = answer.get("entities") or []
    return found[0]["id"] if len(found) == 1 else None


def _star(answer: dict, ids: list) -> dict:
    """One entity in the middle and the rest around it; or all on a circle when none is the centre."""
    (mx, my), centre = (WIDTH / 2, HEIGHT / 2), _centre(answer)
    around = [i for i in ids if i != centre]
    step = 2 * math.pi / max(len(around), 1)
    start = -math.pi / 2 + (step / 2 if centre in ids else 0)  # round a centre: none straight above it
    place = {i: (round(mx + RX * math.cos(start + n * step), 1),
                 round(my + RY * math.sin(start + n * step), 1)) for n, i in enumerate(around)}
    if centre in ids:
        place[centre] = (mx, my)
    elif len(ids) == 1:
        place[ids[0]] = (mx, my)
    return place


def _columns(answer: dict, ids: list) -> tuple[int, int, dict]:
    """Each path a row, each hop a column; an entity on several paths stays where it first stood."""
    paths = answer["path_steps"]
    hops = max(len(p["steps"]) for p in paths)
    step = (PATH_WIDTH - 160) / max(hops, 1)
    place: dict = {}
    for row, path in enumerate(paths):
        y = 60 + row * PATH_ROW
        ends = [path["steps"][0]["from"]["id"], *(s["to"]["id"] for s in path["steps"])]
        for column, entity in enumerate(ends):
            place.setdefault(entity, (round(80 + column * step, 1), y))
    return PATH_WIDTH, 60 + len(paths) * PATH_ROW, {i: p for i, p in place.items() if i in ids}


def _arrow(start: tuple, end: tuple, label: str, current: bool) -> dict:
    """A line from the edge of `start`'s circle to just before `end`'s (room for the arrowhead)."""
    (x1, y1), (x2, y2) = start, end
    length = math.hypot(x2 - x1, y2 - y1) or 1.0
    ux, uy = (x2 - x1) / length, (y2 - y1) / length
    return {"x1": round(x1 + ux * NODE, 1), "y1": round(y1 + uy * NODE, 1),
            "x2": round(x2 - ux * (NODE + 4), 1), "y2": round(y2 - uy * (NODE + 4), 1),
            "lx": round((x1 + x2) / 2, 1), "ly": round((y1 + y2) / 2 - 6, 1), "label": label, "current": current}


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
