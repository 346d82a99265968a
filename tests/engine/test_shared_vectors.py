"""A Chroma server holds every scope of a view in one collection (issue 31): no read of one
scope may return another's vectors, whatever the scope strings or memory ids hold; forgetting
one scope among many leaves none of its vectors; a server's per-scope collections from before
are rebuilt by `reindex` and then gone."""
from __future__ import annotations

import json
import random

import chromadb
from conftest import server_only

from hermes_cmms import MemoryService, Settings
from hermes_cmms.vectors.chroma import VIEWS, VectorIndex, _server_address, collection_name, scope_key

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


def test_no_read_in_one_scope_returns_another_scopes_vectors_whatever_the_strings(home):
    settings = Settings.load(home, embedder="none")
    index, rng = VectorIndex(settings), random.Random(3)
    victim = "telegram:alice"
    secret = [_unit(rng) for _ in range(5)]
    ids = [f"m{n}" for n in range(5)]
    _fill(index, victim, ids, secret)
    crafted = [scope_key(victim), f"{scope_key(victim)}:m0", victim + "\x00", victim.upper(), " " + victim,
               json.dumps({"$ne": victim}), '{"$in": ["telegram:alice"]}', "telegram:alice' OR '1'='1", "", "*"]
    for scope in crafted:  # the same memory ids in every scope, vectors of its own
        _fill(index, scope, ids, [_unit(rng) for _ in ids])
    for scope in crafted:
        for view in VIEWS:
            found = {i for v in secret for i, similarity in index.query(scope, v, 50, view) if similarity > 0.999}
            assert not found, (scope, view, found)
        theirs = index.get(scope, ids)
        assert all(max(abs(a - b) for a, b in zip(theirs[i], secret[n])) > 0.01 for n, i in enumerate(ids))
        assert index.count(scope) == len(ids)
    # and the victim's own are intact, found by its own queries
    assert [index.query(victim, v, 1)[0][0] for v in secret] == ids
    own = index.get(victim, ids)
    assert all(max(abs(a - b) for a, b in zip(own[i], v)) < 1e-6 for i, v in zip(ids, secret))
    # a delete in a crafted scope leaves the victim's vectors alone
    index.delete(crafted[1], ids)
    assert index.present(victim, ids) == set(ids) and index.present(crafted[1], ids) == set()


def test_forgetting_one_scope_among_many_leaves_none_of_its_vectors(home):
    settings = Settings.load(home, embedder="none")
    index, rng = VectorIndex(settings), random.Random(5)
    scopes = [f"slack:user-{n}" for n in range(60)]
    vectors = {s: [_unit(rng) for _ in range(8)] for s in scopes}
    for scope in scopes:
        _fill(index, scope, [f"{scope}-m{n}" for n in range(8)], vectors[scope])
    gone, other = scopes[17], scopes[18]
    index.drop(gone)
    raw = _raw(settings)
    assert {c.name for c in raw.list_collections()} == {p + "shared" for p in VIEWS.values()}  # 3, not 180
    for view, prefix in VIEWS.items():
        held = raw.get_collection(prefix + "shared").get(include=["metadatas"])
        assert len(held["ids"]) == 8 * (len(scopes) - 1)
        assert not [i for i in held["ids"] if i.startswith(scope_key(gone)) or gone in i]
        assert not [m for m in held["metadatas"] if m["scope"] == scope_key(gone)]
        assert index.present(gone, [f"{gone}-m{n}" for n in range(8)], view) == set()
        assert index.present(other, [f"{other}-m{n}" for n in range(8)], view) == {f"{other}-m{n}" for n in range(8)}
    for v in vectors[gone]:  # nothing answers for it, in its scope or any other
        assert not any(s > 0.999 for scope in (gone, other) for _, s in index.query(scope, v, 50))


def test_reindex_moves_a_servers_per_scope_collections_into_the_shared_ones(home):
    settings = Settings.load(home)
    service = MemoryService(settings, scheduler=False)
    try:
        note = service.remember("local:default", "The boat is moored at the north pier")
        assert service.indexer.drain(60)
        raw = _raw(settings)
        raw.delete_collection("cmms_shared")  # as a server written before issue 31 held it:
        old = raw.create_collection(collection_name("local:default"), metadata={"hnsw:space": "cosine"})
        old.upsert(ids=[note], embeddings=[[1.0] + [0.0] * 383])
        service.indexer.vectors._collections.clear()
        assert service.indexer.vectors.present("local:default", [note]) == set()
        done = service.reindex()
        assert done["legacy_collections_dropped"] == 1 and done["vectors_queued"] >= 1
        assert collection_name("local:default") not in {c.name for c in raw.list_collections()}
        assert [h.memory.id for h in service.search("local:default", "where is the boat moored")][:1] == [note]
    finally:
        service.close()
