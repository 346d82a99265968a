"""Bulk fill for large benchmark stores (100k-1M memories), where the real write path is too slow.

Embedding a million messages with MiniLM on 2 cores takes hours, so a bulk fill:
- writes the rows as `Store.add` would (same columns, turn numbers, the end of the previous
  message as context, FTS5 kept by the same triggers), but 5,000 rows per transaction, and
  without outbox rows;
- embeds a pool of `pool` distinct chat messages for real, and gives every bulk message the
  vector of one pool message plus small Gaussian noise (cosine ~0.98 to it), so the vector
  index holds a million distinct vectors shaped like real ones; its context vector is the
  normalised sum of its own and the previous message's, as the indexer makes it.
The texts in SQL are all real generated messages, so keyword search works on real data; only
the vectors of bulk-filled memories do not match their texts. Questions and memories written
later (the timed sync_turn bursts) go through the real embedder.
"""
from __future__ import annotations

import time

import numpy as np
from sqlalchemy import insert

from hermes_cmms.store.models import ConversationSession, Memory
from hermes_cmms.store.store import NewMemory, Store, _tail
from hermes_cmms.common.units import units
from hermes_cmms.vectors.chroma import UNITS

CHUNK = 5000
NOISE = 0.01  # per dimension: a noise vector of norm ~0.2 against unit vectors


def bulk_fill(service, scope: str, target: int, chat, pool: int = 4096, session_turns: int = 20,
              seed: int = 7) -> dict:
    """Fill `scope` up to `target` memories; returns timings."""
    rng = np.random.default_rng(seed)
    store, vectors, embedder = service.store, service.indexer.vectors, service.indexer.embedder
    started = time.perf_counter()
    pool_texts = [text for _ in range(pool // 2) for text in chat.turn()]
    pool_vectors = np.asarray(embedder.embed(pool_texts), dtype=np.float32)
    embedded = time.perf_counter()
    count = store.counts()["memories"]
    sql_s = vector_s = 0.0
    turn = 0
    previous_vector = None
    while count < target:
        rows, sessions = [], []
        now = time.time()
        while len(rows) < min(CHUNK, target - count):
            session, number = f"bulk-{target}-{turn // session_turns:06d}", turn % session_turns + 1
            if number == 1:
                sessions.append({"scope": scope, "session_id": session, "started_at": now,
                                 "last_turn": session_turns, "flushed_at": now})
                previous = None
            for role, content in zip(("user", "assistant"), chat.turn()):
                row = Store._row(NewMemory(scope, content, role=role, session_id=session,
                                           source="bench:bulk"), now)
                row.update(turn=number, context=_tail(previous))
                rows.append(row)
                previous = content
            turn += 1
        t0 = time.perf_counter()
        with store.write() as conn:
            if sessions:
                conn.execute(insert(ConversationSession), sessions)
            conn.execute(insert(Memory), rows)
        t1 = time.perf_counter()
        own = pool_vectors[rng.integers(0, len(pool_vectors), len(rows))]
        own = own + rng.normal(0.0, NOISE, own.shape).astype(np.float32)
        own /= np.linalg.norm(own, axis=1, keepdims=True)
        context = own.copy()
        for i, row in enumerate(rows):
            if row["context"] is not None:
                before = own[i - 1] if i else previous_vector
                if before is not None:
                    context[i] = own[i] + before
        context /= np.linalg.norm(context, axis=1, keepdims=True)
        previous_vector = own[-1]
        ids = [row["id"] for row in rows]
        metadata = [{"kind": "message", "created_at": now}] * len(rows)
        for start in range(0, len(rows), CHUNK):
            part = slice(start, start + CHUNK)
            vectors.upsert(scope, ids[part], own[part].tolist(), metadata[part])
            vectors.upsert(scope, ids[part], context[part].tolist(), metadata[part], view="context")
        _sentence_vectors(vectors, scope, rows, own, now, rng)
        sql_s += t1 - t0
        vector_s += time.perf_counter() - t1
        count += len(rows)
    done = time.perf_counter()
    return {"method": f"bulk ({pool} real embeddings + noise)", "pool_embed_s": round(embedded - started, 2),
            "sql_s": round(sql_s, 2), "vector_s": round(vector_s, 2), "index_s": round(done - started, 2)}


def _sentence_vectors(vectors, scope: str, rows: list[dict], own, now: float, rng) -> None:
    """The sentences view as the indexer writes it (hermes_cmms/units.py): a one-sentence
    memory's own vector as `<id>:0`, else one vector per sentence run (its own plus noise)."""
    unit_ids, unit_vectors, metadata = [], [], []
    for row, vector in zip(rows, own):
        runs = units(row["content"]) or [row["content"]]
        for n, _ in enumerate(runs):
            noisy = vector if len(runs) == 1 else vector + rng.normal(0.0, NOISE, vector.shape).astype(np.float32)
            unit_ids.append(f"{row['id']}:{n}")
            unit_vectors.append((noisy / np.linalg.norm(noisy)).tolist())
            metadata.append({"memory_id": row["id"], "kind": "message", "created_at": now})
    for start in range(0, len(unit_ids), CHUNK):
        part = slice(start, start + CHUNK)
        vectors.upsert(scope, unit_ids[part], unit_vectors[part], metadata[part], view=UNITS)
