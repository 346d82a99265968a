"""`doctor`'s read of an embedded Chroma index on disk, without opening it with Chroma (which
makes a missing file and writes what it opens): its chroma.sqlite3 read-only in a child process
(vectors/chroma.chroma_sql), the collections this store's scopes need, and each saved HNSW
segment's files against its own header. Damage found this way was checked against Chroma itself
(tests/engine/test_doctor_vectors.py): each one makes Chroma fail or answer nothing."""
from __future__ import annotations

import shlex
import struct
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from ..vectors.chroma import VIEWS, IndexBusy, chroma_sql, collection_name
from ._rows.audit import indexed_scopes

if TYPE_CHECKING:
    from ..common.config import Settings

Check = tuple[str, str, str]

HNSW_FILES = ("header.bin", "data_level0.bin", "length.bin", "link_lists.bin")
HEADER = struct.Struct("<iQQQQQQiIQQQdQ")  # hnswlib's header as Chroma writes it (100 bytes)

# SQLite's quick_check's lines (`check`, the line), then each collection (`collection`): its name,
# its HNSW segment, the log position that segment was saved at, the vectors its metadata segment
# holds, and the writes still in the log past that position: one child process, one statement
SEGMENTS = ("SELECT 'check', quick_check, NULL, NULL, NULL, NULL FROM pragma_quick_check() UNION ALL "
            "SELECT 'collection', c.name, s.id, COALESCE(m.seq_id, 0), "
            "(SELECT COUNT(*) FROM embeddings AS e JOIN segments AS o ON o.id = e.segment_id "
            " WHERE o.collection = c.id AND o.scope = 'METADATA'), "
            "(SELECT COUNT(*) FROM embeddings_queue AS q WHERE q.topic LIKE '%/' || c.id "
            " AND q.seq_id > COALESCE(m.seq_id, 0)) "
            "FROM collections AS c LEFT JOIN segments AS s ON s.collection = c.id AND s.scope = 'VECTOR' "
            "LEFT JOIN max_seq_id AS m ON m.segment_id = s.id")


def embedded_index(settings: "Settings", store) -> Optional[Check]:
    """The embedded vector index's line: None when there is no embedded index to read (a Chroma
    server, no embedder) or nothing written to it yet; else ok, or FAIL with what is wrong and
    the fix; warn when another process holds it locked (busy, not damaged)."""
    if settings.chroma_url or settings.embedder == "none":
        return None
    scopes = indexed_scopes(store)
    if not scopes:
        return None
    path = settings.chroma_path
    if not (path / "chroma.sqlite3").is_file():
        gone = "is gone" if not path.is_dir() else "has no chroma.sqlite3"
        return ("FAIL", "vectors", f"the vector index at {path} {gone}, and {len(scopes)} scope(s) have memories "
                f"written to it: recall finds them by their words only; run `{_reindex(settings)}` to embed them again.")
    try:
        rows = chroma_sql(path, SEGMENTS, read_only=True)
    except IndexBusy as exc:
        return ("warn", "vectors", f"the vector index at {path} is busy (another process is writing it: "
                f"{str(exc).rpartition(': ')[2]}): run doctor again.")
    except RuntimeError as exc:
        return _damaged(settings, str(exc).rpartition(": ")[2] or "it cannot be read")
    checked = [str(row[1]) for row in rows if row[0] == "check"]
    if checked != ["ok"]:
        return _damaged(settings, f"its chroma.sqlite3 fails SQLite's check: {(checked or ['no answer'])[0][:120]}")
    return _collections(settings, scopes, [row[1:] for row in rows if row[0] == "collection"])


def _collections(settings: "Settings", scopes: list[str], rows: list[list]) -> Check:
    segments = {name: (segment, saved, held, logged) for name, segment, saved, held, logged in rows}
    missing = [scope for scope in scopes if any(collection_name(scope, view) not in segments for view in VIEWS)]
    if missing:
        return ("FAIL", "vectors", f"the vector index at {settings.chroma_path} lacks the collections of "
                f"{len(missing)} scope(s) with memories written to it (first: {ascii(missing[0])[:80]}): recall "
                f"finds their memories by words only; run `{_reindex(settings)}` to embed them again.")
    for scope in scopes:
        for view in VIEWS:
            segment, saved, held, logged = segments[collection_name(scope, view)]
            wrong = _hnsw_damage(settings.chroma_path / str(segment), held - logged) if segment and saved else None
            if wrong:
                return _damaged(settings, f"the {view} vectors of scope {ascii(scope)[:80]}: {wrong}")
    return ("ok", "vectors", f"{settings.chroma_path} ({len(scopes)} scope(s) indexed; files read, not opened)")


def _hnsw_damage(segment: Path, saved: int) -> Optional[str]:
    """What is wrong with a saved HNSW segment's files, read against its header and the vectors
    it must hold (`saved`, at least: those of the collection not in the log); None if nothing."""
    absent = [name for name in HNSW_FILES if not (segment / name).is_file()]
    if absent:
        return f"{', '.join(absent)} missing in {segment.name}/"
    header = (segment / "header.bin").read_bytes()
    if len(header) < HEADER.size:
        return None  # (Chroma reads a header cut short and still answers: not a finding)
    _, _, capacity, count, element, *_ = HEADER.unpack_from(header)
    if count > capacity:
        return f"header.bin in {segment.name}/ counts {count} vectors in room for {capacity}"
    if count < saved:  # (a lost index Chroma made again, empty, when it was next opened)
        return f"{segment.name}/ holds {count} vectors of the {saved} saved there"
    for name, need in (("data_level0.bin", count * element), ("length.bin", count * 4)):
        size = (segment / name).stat().st_size
        if size < need:
            return f"{name} in {segment.name}/ is {size:,} bytes, cut short of the {need:,} its {count} vectors need"
    return None


def _damaged(settings: "Settings", what: str) -> Check:
    path = settings.chroma_path
    return ("FAIL", "vectors", f"the vector index at {path} is damaged ({what}): recall finds memories by their "
            f"words only; it is made from the store, so move it aside (`mv {shlex.quote(str(path))} "
            f"{shlex.quote(str(path) + '.damaged')}`) and run `{_reindex(settings)}` to embed every memory again.")


def _reindex(settings: "Settings") -> str:
    return f"hermes-cmms reindex --hermes-home {shlex.quote(str(settings.home))}"
