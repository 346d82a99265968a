"""What the knowledge layer costs: learning at session flush, graph queries and rebuild, the
router, a full audit, and a metrics scrape.

Each part runs in a fresh temporary HERMES_HOME, keyword-only (CMMS_EMBEDDER=none) so the
figures are the knowledge layer's own, scheduler off. The user turns come from the labelled
extraction sets in tests/data/.

    python benchmarks/knowledge.py --turns 2000 --facts 30000 --json OUT
"""
from __future__ import annotations

import argparse
import json
import random
import shutil
import tempfile
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"
SCOPE = "bench:knowledge"
NAMES = ["Alice", "Bruno", "Carla", "Dmitri", "Elena", "Farid", "Greta", "Hiro", "Ines", "Jonas"]
PLACES = ["Lisbon", "Porto", "Faro", "Braga", "Coimbra", "Evora", "Aveiro", "Leiria"]


def _service(home: str):
    from hermes_cmms import MemoryService, Settings

    return MemoryService(Settings.load(home, embedder="none"), scheduler=False)


def _ms(values: list[float]) -> dict:
    values = sorted(v * 1000 for v in values)
    at = lambda p: round(values[min(len(values) - 1, int(len(values) * p))], 2)  # noqa: E731
    return {"n": len(values), "p50": at(0.5), "p95": at(0.95), "max": round(values[-1], 2)}


def user_turns() -> list[str]:
    return [json.loads(line)["text"] for name in ("extraction_dev.jsonl", "extraction_eval.jsonl")
            for line in (DATA / name).read_text(encoding="utf-8").splitlines() if line.strip()]


def bench_flush(home: str, turns: int) -> dict:
    """Sessions of 10 turns each; the time of each session's flush (learning + bookkeeping).
    Each pass over the labelled messages goes to a scope of its own, so no turn repeats an
    earlier one (a repeat reinforces the stored message and is not read again)."""
    texts = user_turns()
    with _service(home) as service:
        flushes, learned = [], 0
        for session in range(turns // 10):
            numbers = range(session * 10, session * 10 + 10)
            scopes = {f"{SCOPE}:{n // len(texts)}" for n in numbers}
            for n in numbers:
                service.retain_turn(f"{SCOPE}:{n // len(texts)}", f"s{session}", texts[n % len(texts)], "OK.")
            started = time.perf_counter()
            learned += sum(service.upkeep.extract_session(scope, f"s{session}") for scope in scopes)
            flushes.append(time.perf_counter() - started)
    return {"turns": turns, "items_learned": learned, "flush_ms_per_10_turns": _ms(flushes)}


def bench_graph(home: str, facts: int) -> dict:
    """`facts` facts among people and places (a tenth about the user), then queries."""
    rng = random.Random(7)
    people = [f"{rng.choice(NAMES)} {n}" for n in range(facts // 5)]
    with _service(home) as service:
        started = time.perf_counter()
        for n in range(facts):
            subject = "user" if n % 10 == 0 else rng.choice(people)
            target = rng.choice(PLACES) if n % 3 else rng.choice(people)
            service.remember_fact(SCOPE, subject, rng.choice(["knows", "lives in", "visited"]), target)
        fill_s = time.perf_counter() - started
        entities = _entity_ids(service)
        query, first, paths = [], [], []
        for n in range(200):
            query.append(_timed(lambda: service.graph_search(SCOPE, query=f"Who knows {rng.choice(people)}?")))
            first.append(_timed(lambda: service.graph_search(SCOPE, query="Where do I live?")))
            a, b = rng.sample(entities, 2)
            paths.append(_timed(lambda: service.graph_search(SCOPE, source_id=a, target_id=b, max_depth=4)))
        from hermes_cmms.knowledge import graph

        started = time.perf_counter()
        rebuilt = graph.rebuild(service, SCOPE)
        rebuild_s = time.perf_counter() - started
    return {"facts": facts, "entities": rebuilt["entities"], "fill_s": round(fill_s, 1),
            "query_ms": _ms(query), "first_person_query_ms": _ms(first), "paths_depth4_ms": _ms(paths),
            "rebuild_s": round(rebuild_s, 2)}


def _entity_ids(service) -> list[str]:
    from sqlalchemy import select

    from hermes_cmms.store.models import Entity

    with service.store.read() as conn:
        return list(conn.execute(select(Entity.id).where(Entity.scope == SCOPE)).scalars())


def _timed(call) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def bench_health(home: str) -> dict:
    """Router, audit and metrics scrape on the store the flush part filled."""
    from hermes_cmms.ops.metrics import exposition

    questions = ["What do I like?", "Why did we choose it?", "How do I deploy?", "Where do I live?",
                 "What do I think about the API?", "zebra crossing"]
    with _service(home) as service:
        memories = service.store.counts()["memories"]
        routes = [_timed(lambda q=q: service.route(f"{SCOPE}:0", q)) for q in questions * 20]
        audit = [_timed(lambda: service.upkeep.audit("all")) for _ in range(3)]
        scrape = [_timed(lambda: exposition(service)) for _ in range(20)]
    return {"memories": memories, "route_ms": _ms(routes), "audit_all_ms": _ms(audit),
            "metrics_scrape_ms": _ms(scrape)}


def _report(name: str, figures: dict) -> dict:
    print(json.dumps({name: figures}), flush=True)
    return figures


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=2000, help="user turns learned from (default 2000)")
    parser.add_argument("--facts", type=int, default=30000, help="facts in the graph part (default 30000)")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args(argv)
    result = {}
    home = tempfile.mkdtemp(prefix="cmms-bench-knowledge-")
    try:
        result["flush"] = _report("flush", bench_flush(home, args.turns))
        result["health"] = _report("health", bench_health(home))
    finally:
        shutil.rmtree(home, ignore_errors=True)
    home = tempfile.mkdtemp(prefix="cmms-bench-graph-")
    try:
        result["graph"] = _report("graph", bench_graph(home, args.facts))
    finally:
        shutil.rmtree(home, ignore_errors=True)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
