"""Many scopes on a Chroma server (issue 31): a collection per scope and view, so no read of one
scope returns another's vectors, whatever the scope strings or memory ids hold, and forgetting
one scope among many leaves none of its vectors and takes none of the others'."""
from __future__ import annotations

import json
import random

import chromadb
from conftest import server_only

from hermes_cmms import Settings
from hermes_cmms.vectors.chroma import VIEWS, VectorIndex, _server_address, collection_name

pytestmark = server_only
DIM = 16


def _unit(rng: random.Random) -> list[float]:
    vector = [rng.gauss(0, 1) for _ in range(DIM)]
    norm = sum(x * x for x in vector) ** 0.5
    return [x / norm for x in vector]


def _fill(index: VectorIndex, scope: str, ids: list[str], vectors: list[list[float]]) -> None:
    for view in VIEWS:
        stored = ids if view != "sentences" else [f"{i}:0" for i in ids]
        meta = [{"kind": "note", **({"memory_id": i} if view == "sentences" else {})} for i in ids]
        index.upsert(scope, stored, vectors, meta, view=view)


def _raw(settings: Settings):
    """A plain chromadb client on the test's Chroma database: what is really stored."""
    database = settings.chroma_url.rstrip("/").rpartition("/")[2]
    return chromadb.HttpClient(**_server_address(settings.chroma_url), database=database)


def _close(a: list[float], b: list[float]) -> bool:
    return max(abs(x - y) for x, y in zip(a, b)) < 1e-4


def test_no_read_in_one_scope_returns_another_scopes_vectors_whatever_the_strings(home):
    settings = Settings.load(home, embedder="none")
    index, rng = VectorIndex(settings), random.Random(3)
    victim = "telegram:alice"
    secret = [_unit(rng) for _ in range(5)]
    ids = [f"m{n}" for n in range(5)]
    _fill(index, victim, ids, secret)
    crafted = [collection_name(victim)[5:], collection_name(victim), victim + "\x00", victim.upper(), " " + victim,
               json.dumps({"$ne": victim}), '{"$in": ["telegram:alice"]}', "telegram:alice' OR '1'='1", "", "*"]
    for scope in crafted:  # the same memory ids in every scope, vectors of its own
        _fill(index, scope, ids, [_unit(rng) for _ in ids])
    for scope in crafted:
        for view in VIEWS:
            found = {i for v in secret for i, similarity in index.query(scope, v, 50, view) if similarity > 0.999}
            assert not found, (scope, view, found)
        theirs = index.get(scope, ids)
        assert not any(_close(theirs[i], secret[n]) for n, i in enumerate(ids))
        assert index.count(scope) == len(ids)
    assert [index.query(victim, v, 1)[0][0] for v in secret] == ids  # the victim's own, intact
    own = index.get(victim, ids)
    assert all(_close(own[i], v) for i, v in zip(ids, secret))
    index.delete(crafted[1], ids)  # a delete in a crafted scope leaves the victim's alone
    assert index.present(victim, ids) == set(ids) and index.present(crafted[1], ids) == set()


def test_forgetting_one_scope_among_many_leaves_none_of_its_vectors(home):
    settings = Settings.load(home, embedder="none")
    index, rng = VectorIndex(settings), random.Random(5)
    scopes = [f"slack:user-{n}" for n in range(20)]
    vectors = {s: [_unit(rng) for _ in range(8)] for s in scopes}
    for scope in scopes:
        _fill(index, scope, [f"{scope}-m{n}" for n in range(8)], vectors[scope])
    gone = scopes[7]
    index.drop(gone)
    raw = _raw(settings)
    names = {c.name for c in raw.list_collections(limit=1000)}
    assert not names & {collection_name(gone, view) for view in VIEWS}
    assert len(names) == len(VIEWS) * (len(scopes) - 1)
    for collection in raw.list_collections(limit=1000):  # none of its ids or vectors anywhere
        held = collection.get(include=["embeddings"])
        assert not [i for i in held["ids"] if i.startswith(gone)]
        assert not [e for e in held["embeddings"] for v in vectors[gone] if _close(list(e), v)]
    for scope in scopes[:3] + scopes[8:10]:  # the others keep theirs
        assert index.present(scope, [f"{scope}-m{n}" for n in range(8)]) == {f"{scope}-m{n}" for n in range(8)}
    for v in vectors[gone]:  # nothing answers for it, in its scope or any other
        assert not any(s > 0.999 for scope in (gone, scopes[8]) for _, s in index.query(scope, v, 50))
