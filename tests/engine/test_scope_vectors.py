"""Many scopes on a Chroma server (issue 31): scopes hashed into `chroma_buckets` collections a
view. No read of one scope returns another's vectors, whatever the scope strings or memory ids
hold, even when every scope shares one collection; forgetting one scope among 10,000 (a real
`hermes-cmms forget` process) leaves none of its vectors and takes none of the others'; the
layouts from before (a collection per scope, another bucket count) are moved by `reindex`
without embedding anything again, and reached by a forget before that."""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import numpy as np
from conftest import server_only

from hermes_cmms import MemoryService, Settings
from hermes_cmms.vectors.chroma import OWNER, VIEWS, VectorIndex, _server_address, bucket_name, collection_name, scope_key

pytestmark = server_only
DIM = 16


def _unit(rng: random.Random, dim: int = DIM) -> list[float]:
    vector = [rng.gauss(0, 1) for _ in range(dim)]
    norm = sum(x * x for x in vector) ** 0.5
    return [x / norm for x in vector]


def _fill(index: VectorIndex, scope: str, ids: list[str], vectors: list[list[float]]) -> None:
    for view in VIEWS:
        stored = ids if view != "sentences" else [f"{i}:0" for i in ids]
        meta = [{"kind": "note", **({"memory_id": i} if view == "sentences" else {})} for i in ids]
        index.upsert(scope, stored, vectors, meta, view=view)


def _raw(settings: Settings):
    """A plain chromadb client on the test's Chroma database: what is really stored."""
    import chromadb

    database = settings.chroma_url.rstrip("/").rpartition("/")[2]
    return chromadb.HttpClient(**_server_address(settings.chroma_url), database=database)


def _close(a, b) -> bool:
    return max(abs(x - y) for x, y in zip(a, b)) < 1e-4


def test_no_read_in_one_scope_returns_another_scopes_vectors_even_in_one_collection(home):
    settings = Settings.load(home, embedder="none", chroma_buckets=1)  # every scope in the same collection
    index, rng = VectorIndex(settings), random.Random(3)
    victim = "telegram:alice"
    secret = [_unit(rng) for _ in range(5)]
    ids = [f"m{n}" for n in range(5)]
    _fill(index, victim, ids, secret)
    crafted = [scope_key(victim), f"{scope_key(victim)}:m0", collection_name(victim), victim + "\x00",
               victim.upper(), " " + victim, json.dumps({"$ne": victim}), '{"$in": ["telegram:alice"]}',
               "telegram:alice' OR '1'='1", "", "*"]
    for scope in crafted:  # the same memory ids in every scope, vectors of its own
        _fill(index, scope, ids, [_unit(rng) for _ in ids])
    assert {c.name for c in _raw(settings).list_collections()} == {bucket_name(victim, v, 1) for v in VIEWS}
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
    assert index.count() == len(ids) * len(crafted)  # 12 scopes of 5 memories, one emptied


def _bulk(raw, scopes: list[str], dim: int, buckets: int) -> dict[str, np.ndarray]:
    """One memory a scope in every view, written straight into the buckets as the indexer lays
    them out (ids `<scope key>:<id>`, the scope key in the metadata): 10,000 scopes through
    VectorIndex would take 30,000 requests."""
    rng = np.random.default_rng(11)
    vectors = rng.standard_normal((len(scopes), dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    for view in VIEWS:
        groups: dict[str, list[int]] = {}
        for n, scope in enumerate(scopes):
            groups.setdefault(bucket_name(scope, view, buckets), []).append(n)
        for name, members in groups.items():
            memory = [f"m{n}" for n in members]
            raw.get_or_create_collection(name, metadata={"hnsw:space": "cosine"}, embedding_function=None).upsert(
                ids=[f"{scope_key(scopes[n])}:{m}" + (":0" if view == "sentences" else "")
                     for n, m in zip(members, memory)],
                embeddings=vectors[members],
                metadatas=[{"kind": "note", "scope": scope_key(scopes[n]),
                            **({"memory_id": m} if view == "sentences" else {})} for n, m in zip(members, memory)])
    return {scope: vectors[n] for n, scope in enumerate(scopes)}


def test_forgetting_one_scope_among_10000_leaves_none_of_its_vectors_and_takes_no_others(home):
    settings = Settings.load(home)
    victim = "telegram:user-victim"
    scopes = [f"telegram:user-{n:05d}" for n in range(10_000)]
    neighbours = [s for s in scopes if bucket_name(s, "content", settings.chroma_buckets)
                  == bucket_name(victim, "content", settings.chroma_buckets)]
    assert 50 < len(neighbours) < 150  # ~100 scopes a collection
    service = MemoryService(settings, scheduler=False)
    try:
        gone = [service.remember(victim, text) for text in
                ("Zanzibarquux keeps the spare key under the blue flowerpot",
                 "The victim's bank PIN hint is the dog's birthday")]
        kept = service.remember(neighbours[0], "The neighbour parks in bay 12")
        assert service.upkeep.drain(120)
        victim_vectors = service.indexer.vectors.get(victim, gone)
        assert set(victim_vectors) == set(gone)
    finally:
        service.close()
    raw = _raw(settings)
    others = _bulk(raw, scopes, len(next(iter(victim_vectors.values()))), settings.chroma_buckets)
    before = {c.name: c.count() for c in raw.list_collections() if c.name != OWNER}
    assert len(before) == len(VIEWS) * settings.chroma_buckets and sum(before.values()) == 3 * 10_003

    done = subprocess.run([sys.executable, "-m", "hermes_cmms.cli", "forget", "--scope", victim, "--all"],
                          capture_output=True, text=True, env={**os.environ, "HERMES_HOME": str(home)}, timeout=300)
    assert done.returncode == 0, done.stderr

    after = {c.name: c.count() for c in raw.list_collections() if c.name != OWNER}
    assert sum(after.values()) == sum(before.values()) - 2 * len(VIEWS)  # its 2 memories in 3 views, no more
    assert {n: c for n, c in after.items() if c != before[n]} == {
        bucket_name(victim, v, settings.chroma_buckets): before[bucket_name(victim, v, settings.chroma_buckets)] - 2
        for v in VIEWS}
    for collection in raw.list_collections():  # nothing of it left to read, by key, id or vector
        held = collection.get(where={"scope": scope_key(victim)}, include=[])
        assert held["ids"] == []
        assert not [i for i in collection.get(include=[])["ids"] if any(g in i for g in gone)]
    index = VectorIndex(settings)
    for vector in victim_vectors.values():
        for scope in (victim, neighbours[0], neighbours[1]):
            for view in VIEWS:
                assert not [i for i, s in index.query(scope, vector, 50, view) if s > 0.999], (scope, view)
    assert index.present(neighbours[0], [kept]) == {kept}
    for scope in neighbours[1:4] + scopes[:3]:  # the others keep theirs, found by their own queries
        assert [i for i, _ in index.query(scope, others[scope].tolist(), 1)] == [f"m{scopes.index(scope)}"]


def test_reindex_moves_the_layouts_from_before_into_the_buckets_without_embedding_again(home, monkeypatch):
    old = Settings.load(home, chroma_buckets=3)
    service = MemoryService(old, scheduler=False)
    try:
        boat = service.remember("local:default", "The boat is moored at the north pier")
        tea = service.remember("telegram:ana", "Ana drinks green tea every morning")
        assert service.upkeep.drain(60)
        stored = {boat: service.indexer.vectors.get("local:default", [boat])[boat],
                  tea: service.indexer.vectors.get("telegram:ana", [tea])[tea]}
    finally:
        service.close()
    raw = _raw(old)
    # local:default as a server written before issue 31 held it: a collection per scope and view
    for view in VIEWS:
        bucket = raw.get_collection(bucket_name("local:default", view, 3))
        held = bucket.get(where={"scope": scope_key("local:default")}, include=["embeddings", "metadatas"])
        own = raw.create_collection(collection_name("local:default", view), metadata={"hnsw:space": "cosine"})
        own.upsert(ids=[i.partition(":")[2] for i in held["ids"]], embeddings=held["embeddings"],
                   metadatas=[{k: v for k, v in m.items() if k != "scope"} for m in held["metadatas"]])
        bucket.delete(ids=held["ids"])
    settings = Settings.load(home, chroma_buckets=5)  # telegram:ana: in buckets of another count
    old_buckets = len({bucket_name(s, v, 3) for s in ("local:default", "telegram:ana") for v in VIEWS})
    monkeypatch.setenv("CMMS_CHROMA_BUCKETS", "5")
    said = _doctor(home)  # what a user upgrading sees before the reindex: the doctor says what to run
    assert said[0] == "warn" and f"{len(VIEWS)} collections in a collection per scope" in said[1], said
    assert f"{old_buckets} collections in 3 buckets a view" in said[1] and "hermes-cmms reindex" in said[1], said
    service = MemoryService(settings, scheduler=False)
    try:
        health = {line["name"]: line for line in service.overview()["health"]}  # the dashboard's health
        assert health["vectors"]["level"] == "warn" and "hermes-cmms reindex" in health["vectors"]["detail"]
        done = service.upkeep.reindex()
        assert done["vectors_moved"] == 2 * len(VIEWS) and done["vectors_queued"] == 0, done  # none embedded again
        assert done["old_buckets_dropped"] == old_buckets
        names = {c.name for c in raw.list_collections()}
        assert names == {bucket_name(s, v, 5) for s in ("local:default", "telegram:ana") for v in VIEWS} | {OWNER}
        vectors = service.indexer.vectors
        assert _close(vectors.get("local:default", [boat])[boat], stored[boat])
        assert _close(vectors.get("telegram:ana", [tea])[tea], stored[tea])
        assert [h.id for h in service.search("local:default", "where is the boat moored")][:1] == [boat]
        assert service.upkeep.audit()["checked"].get("unmapped_collections") == 0
    finally:
        service.close()
    assert _doctor(home) == ("ok", f"{settings.chroma_url} (5 buckets a view)")


def _doctor(home) -> tuple[str, str]:
    """`hermes-cmms doctor`'s vectors line, in a real process: (level, detail)."""
    done = subprocess.run([sys.executable, "-m", "hermes_cmms.cli", "doctor", "--hermes-home", str(home)],
                          capture_output=True, text=True, timeout=120)
    line = next(line for line in done.stdout.splitlines() if line[5:].startswith("vectors: "))
    return line[:4].strip(), line[len("warn vectors: "):]


def test_a_forget_before_the_reindex_reaches_the_old_layout(home):
    old = Settings.load(home, embedder="none", chroma_buckets=2)
    rng = random.Random(9)
    before = VectorIndex(old)
    secret = [_unit(rng) for _ in range(3)]
    _fill(before, "slack:bo", ["a", "b", "c"], secret)
    raw = _raw(old)
    own = raw.create_collection(collection_name("slack:bo", "content"), metadata={"hnsw:space": "cosine"})
    own.upsert(ids=["d"], embeddings=[_unit(rng)])
    index = VectorIndex(Settings.load(home, embedder="none", chroma_buckets=7))
    index.delete("slack:bo", ["a"])
    assert before.present("slack:bo", ["a", "b", "c"]) == {"b", "c"}
    index.drop("slack:bo")
    assert before.present("slack:bo", ["a", "b", "c"]) == set()
    assert collection_name("slack:bo", "content") not in {c.name for c in raw.list_collections()}
    for vector in secret:
        assert not [i for i, s in before.query("slack:bo", vector, 10) if s > 0.999]


def test_a_move_cut_short_and_run_again_keeps_the_vectors_it_moved(home, monkeypatch):
    """A failure after the old copies were blanked makes the move run again: it must not carry
    the blank vectors over the ones it had moved."""
    from chromadb.api.models.Collection import Collection

    rng = random.Random(1)
    before = VectorIndex(Settings.load(home, embedder="none", chroma_buckets=2))
    secret = [_unit(rng), _unit(rng)]
    _fill(before, "telegram:42", ["m1", "m2"], secret)
    index = VectorIndex(Settings.load(home, embedder="none", chroma_buckets=3))
    delete, failed = Collection.delete, []

    def fails_once(self, ids=None, where=None, **more):
        if self.name.startswith("cmms_b2_") and not failed and ids and not ids[0].startswith("cmms:scrub"):
            failed.append(self.name)
            raise RuntimeError("the server answered 500")
        return delete(self, ids=ids, where=where, **more)

    monkeypatch.setattr(Collection, "delete", fails_once)
    assert index.move_old("telegram:42") >= 2 and failed
    monkeypatch.setattr(Collection, "delete", delete)
    moved = index.get("telegram:42", ["m1", "m2"])
    assert all(_close(moved[i], v) for i, v in zip(["m1", "m2"], secret))
    assert [i for i, _ in index.query("telegram:42", secret[0], 1)] == ["m1"]
    assert index.move_old("telegram:42") == 0  # run again: nothing left to move, nothing changed
    assert _close(index.get("telegram:42", ["m1"])["m1"], secret[0])


def test_a_vector_written_since_the_layout_changed_is_kept_and_its_old_copy_goes(home):
    """A memory re-embedded after the upgrade (its context changed by a forget, say) is written
    in the new layout, and its stale copy in the old one goes then, not at the next reindex:
    it could hold what was forgotten, and a move must never put it back over the new one."""
    rng = random.Random(2)
    before = VectorIndex(Settings.load(home, embedder="none", chroma_buckets=2))
    stale, fresh = _unit(rng), _unit(rng)
    _fill(before, "slack:y", ["Y"], [stale])
    index = VectorIndex(Settings.load(home, embedder="none", chroma_buckets=5))
    _fill(index, "slack:y", ["Y"], [fresh])
    for view in VIEWS:  # the old copy is gone from every view as the new one is written
        assert before.present("slack:y", ["Y"], view) == set()
    assert index.move_old("slack:y") == 0
    assert _close(index.get("slack:y", ["Y"])["Y"], fresh)
    assert not [i for i, s in index.query("slack:y", stale, 5, "sentences") if s > 0.999]


def test_old_buckets_left_in_one_view_only_are_still_found(home):
    settings = Settings.load(home, embedder="none", chroma_buckets=2)
    before, rng = VectorIndex(settings), random.Random(4)
    vector = _unit(rng)
    _fill(before, "slack:z", ["M"], [vector])
    _raw(settings).delete_collection(bucket_name("slack:z", "content", 2))  # content's gone, the others not
    index = VectorIndex(Settings.load(home, embedder="none", chroma_buckets=4))
    index.drop("slack:z")
    for view in ("context", "sentences"):
        assert before.present("slack:z", ["M"], view) == set()
