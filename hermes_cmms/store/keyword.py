"""Keyword index behind a small interface; the only home of dialect-specific search SQL."""
from __future__ import annotations

import math
from functools import lru_cache
from typing import Optional, Protocol

from sqlalchemy import Connection, Float, Integer, text

from ._migrations import Migration
from ._postgres import outbox_without_statistics
from ..common.text import terms


class KeywordIndex(Protocol):
    """Full-text search over the memories table, kept in sync by the database itself."""

    migrations: list[Migration]

    def search(self, conn: Connection, scope: str, query: str, limit: int,
               with_context: bool = False) -> list[tuple[str, float]]:
        """Return (memory id, score) pairs, best first; higher score is better. With
        `with_context`, a memory also matches through the message before it."""

    def searches(self, conn: Connection, scope: str, query: str, limit: int,
                 views: tuple[bool, ...] = (False, True)) -> list[list[tuple[str, float]]]:
        """search() for each of `views` (with_context False, True), sharing what they can."""

    def matches(self, conn: Connection, scope: str, query: str, with_context: bool = False, every: bool = False,
                scored: bool = True, between: Optional[tuple[int, int]] = None):
        """Every row of `scope` holding any word of `query` (with `every`, all of them), unbounded
        (a browse filters and counts them in SQL): a select of (seq, score), higher score better,
        or of seq alone without `scored` (scoring every match is what a common word costs); with
        `between` (two seqs), only the rows in that range (the scores of one page, each as it is
        among all matches); None without words."""

    def purge(self, conn: Connection, first: bool = True) -> bool:
        """One bounded step of rewriting the index so no trace of deleted rows is left in its
        files; True while more steps are needed (each step in a write transaction of its own,
        `first` only for the first step of a purge)."""



def _fts5_create(conn: Connection) -> None:
    for statement in (
        """CREATE VIRTUAL TABLE memories_fts USING fts5(
            content, tokenize = 'porter unicode61 remove_diacritics 2')""",
        """CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
            INSERT INTO memories_fts (rowid, content) VALUES (new.seq, new.content);
        END""",
        """CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
            DELETE FROM memories_fts WHERE rowid = old.seq;
        END""",
        """CREATE TRIGGER memories_fts_update AFTER UPDATE OF content ON memories BEGIN
            DELETE FROM memories_fts WHERE rowid = old.seq;
            INSERT INTO memories_fts (rowid, content) VALUES (new.seq, new.content);
        END""",
        "INSERT INTO memories_fts (rowid, content) SELECT seq, content FROM memories",
    ):
        conn.execute(text(statement))


def _fts5_add_context(conn: Connection) -> None:
    for statement in (
        "DROP TRIGGER memories_fts_insert",
        "DROP TRIGGER memories_fts_delete",
        "DROP TRIGGER memories_fts_update",
        "DROP TABLE memories_fts",
        """CREATE VIRTUAL TABLE memories_fts USING fts5(
            content, context, tokenize = 'porter unicode61 remove_diacritics 2')""",
        """CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
            INSERT INTO memories_fts (rowid, content, context)
            VALUES (new.seq, new.content, new.context);
        END""",
        """CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
            DELETE FROM memories_fts WHERE rowid = old.seq;
        END""",
        """CREATE TRIGGER memories_fts_update AFTER UPDATE OF content, context ON memories BEGIN
            DELETE FROM memories_fts WHERE rowid = old.seq;
            INSERT INTO memories_fts (rowid, content, context)
            VALUES (new.seq, new.content, new.context);
        END""",
        "INSERT INTO memories_fts (rowid, content, context) SELECT seq, content, context FROM memories",
    ):
        conn.execute(text(statement))


def _fts5_add_scope(conn: Connection) -> None:
    """A scope column holding one token per scope, so MATCH itself narrows to the scope."""
    scope_token = "'s' || hex(new.scope)"
    for statement in (
        "DROP TRIGGER memories_fts_insert",
        "DROP TRIGGER memories_fts_delete",
        "DROP TRIGGER memories_fts_update",
        "DROP TABLE memories_fts",
        """CREATE VIRTUAL TABLE memories_fts USING fts5(
            content, context, scope, tokenize = 'porter unicode61 remove_diacritics 2')""",
        f"""CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
            INSERT INTO memories_fts (rowid, content, context, scope)
            VALUES (new.seq, new.content, new.context, {scope_token});
        END""",
        """CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
            DELETE FROM memories_fts WHERE rowid = old.seq;
        END""",
        f"""CREATE TRIGGER memories_fts_update AFTER UPDATE OF content, context, scope ON memories BEGIN
            DELETE FROM memories_fts WHERE rowid = old.seq;
            INSERT INTO memories_fts (rowid, content, context, scope)
            VALUES (new.seq, new.content, new.context, {scope_token});
        END""",
        "INSERT INTO memories_fts (rowid, content, context, scope) "
        "SELECT seq, content, context, 's' || hex(scope) FROM memories",
    ):
        conn.execute(text(statement))


class SqliteKeywordIndex:
    """SQLite FTS5 (porter stemming, BM25), synced by triggers on `memories`.

    Ranking every row that contains a common word costs time in proportion to the store
    (a word in 30% of 100k rows took ~40 ms). So the work per query is bounded: words found in
    more than COMMON rows of the scope only rank rows that also hold a rarer query word (those
    holding both come first), and then, as when every word is common, only the newest COMMON
    rows holding all of the common words (then any of them) are ranked.
    """

    COMMON = 2000

    migrations: list[Migration] = [("0001_fts5_memories", _fts5_create),
                                   ("0002_fts5_context", _fts5_add_context),
                                   ("0003_fts5_scope", _fts5_add_scope)]

    _RANKED = ("SELECT rowid, bm25(memories_fts, 1.0, 1.0, 0.0) AS rank FROM memories_fts "
               "WHERE memories_fts MATCH :match")
    _SEARCH = text(
        "SELECT m.id, f.rank FROM ({ranked}) AS f JOIN memories AS m ON m.seq = f.rowid "
        "WHERE m.scope = :scope ORDER BY f.rank LIMIT :limit".format(ranked=_RANKED))
    _SEARCH_NEWEST = text(
        "SELECT m.id, f.rank FROM ({ranked} ORDER BY rowid DESC LIMIT :newest) AS f "
        "JOIN memories AS m ON m.seq = f.rowid "
        "WHERE m.scope = :scope ORDER BY f.rank LIMIT :limit".format(ranked=_RANKED))

    MERGE_PAGES = 64  # leaf pages one purge step writes: ~40 ms at 100k memories on 2 cores
    LEVELS_MOST = 1000  # SQLite before 3.4x never drops an FTS5 level and calls >2000 corrupt

    def purge(self, conn: Connection, first: bool = True) -> bool:
        """FTS5 records a delete as a tombstone: the deleted words stay in the older segments
        until they are merged (SQLite 3.40 has no 'secure-delete' option). The first step is a
        'merge' with a negative page count: it gathers every segment into one new level and
        starts merging them, MERGE_PAGES leaf pages at a time; the next steps are positive
        'merge's, which carry an unfinished merge on first, until one finds nothing to do: the
        index is then one segment without deleted entries, as after 'optimize', but in steps
        that hold the writer lock briefly. Only the first step may be negative: each negative
        one starts over in a new level, and SQLite 3.40 never drops a level, so with another
        writer adding a segment between every two steps, each step added two levels until, past
        2000, every use of the index failed as "database disk image is malformed". A purge
        still adds two; once the index has LEVELS_MOST, the first step rebuilds it instead
        (one transaction, as long as the table is large), which starts it at one level again."""
        if first and _fts5_levels(conn) >= self.LEVELS_MOST:
            conn.execute(text("INSERT INTO memories_fts (memories_fts) VALUES ('rebuild')"))
            return False
        before = conn.execute(text("SELECT total_changes()")).scalar_one()
        conn.execute(text("INSERT INTO memories_fts (memories_fts, rank) VALUES ('merge', :pages)"),
                     {"pages": -self.MERGE_PAGES if first else self.MERGE_PAGES})
        return conn.execute(text("SELECT total_changes()")).scalar_one() - before >= 2  # FTS5's "did work"

    def matches(self, conn: Connection, scope: str, query: str, with_context: bool = False, every: bool = False,
                scored: bool = True, between: Optional[tuple[int, int]] = None):
        words = terms(query)
        if not words:
            return None
        columns = "{content context}" if with_context else "content"
        quoted = (" AND " if every else " OR ").join(f'"{word}"' for word in words)  # quoted: no FTS syntax
        # a range, not a list of rowids: bm25 counts each word's rows once per query (~5 ms for a common word)
        statement = text(("SELECT rowid AS seq, -bm25(memories_fts, 1.0, 1.0, 0.0) AS score" if scored else
                          "SELECT rowid AS seq") + " FROM memories_fts WHERE memories_fts MATCH :kw_match"
                         + (" AND rowid BETWEEN :kw_low AND :kw_high" if between else "")).bindparams(
            kw_match=f'scope : "{_scope_token(scope)}" AND {columns} : ({quoted})')
        if between:
            statement = statement.bindparams(kw_low=between[0], kw_high=between[1])
        return statement.columns(seq=Integer, score=Float) if scored else statement.columns(seq=Integer)

    def search(self, conn: Connection, scope: str, query: str, limit: int,
               with_context: bool = False) -> list[tuple[str, float]]:
        return self.searches(conn, scope, query, limit, (with_context,))[0]

    def searches(self, conn: Connection, scope: str, query: str, limit: int,
                 views: tuple[bool, ...] = (False, True)) -> list[list[tuple[str, float]]]:
        """search() for each of `views` (with_context False, True): how many rows hold each word
        in every view counted in one statement."""
        words = terms(query)
        if not words:
            return [[] for _ in views]
        quoted = [f'"{word}"' for word in words]  # words are quoted: no FTS syntax
        matchers = [_matcher(scope, "{content context}" if with_context else "content") for with_context in views]
        counts = self._counts(conn, [match(q) for match in matchers for q in quoted])
        return [self._ranked(conn, scope, limit, quoted, counts[i * len(quoted):(i + 1) * len(quoted)], match)
                for i, match in enumerate(matchers)]

    def _counts(self, conn: Connection, matches: list[str]) -> list[int]:
        """For each MATCH expression, how many rows it finds, up to COMMON + 1."""
        found = []
        for start in range(0, len(matches), _COUNTED):
            chunk = matches[start:start + _COUNTED]
            found += conn.execute(_counting(len(chunk)), {"cap": self.COMMON + 1, **{
                f"m{i}": match for i, match in enumerate(chunk)}}).one()
        return found

    def _ranked(self, conn: Connection, scope: str, limit: int, quoted: list[str], counts: list[int],
                match) -> list[tuple[str, float]]:
        """One view's ranking, given how many rows hold each of the quoted words."""
        rare = [q for q, count in zip(quoted, counts) if count <= self.COMMON]
        common = [q for q in quoted if q not in rare]
        if not common:
            return self._run(conn, self._SEARCH, match(" OR ".join(quoted)), scope, limit)
        found = []
        if rare:  # rows with a rare and a common word, then rows with a rare word
            found = self._first_then(conn, scope, limit, self._SEARCH,
                                     f"({' OR '.join(rare)}) AND ({' OR '.join(common)})",
                                     " OR ".join(rare), match)
        if len(found) < limit:  # then the newest rows holding the common words
            found = _topped_up(found, self._newest(conn, scope, limit, common, match), limit)
        return found

    def _newest(self, conn: Connection, scope: str, limit: int, quoted: list[str], match):
        """Rank the newest COMMON rows holding all (then any) of these common words.

        Intersecting with a scope that holds most of the table costs as much as the scope is
        large (~100 ms at 1M rows), so the newest rows of the whole table come first and MATCH
        is narrowed to the scope only when they hold too few of the scope's rows."""
        either = " OR ".join(quoted) if len(quoted) > 1 else None
        found = self._first_then(conn, scope, limit, self._SEARCH_NEWEST, " AND ".join(quoted), either,
                                 lambda expression: match(expression, scoped=False))
        if len(found) < limit:
            found = _topped_up(found, self._first_then(conn, scope, limit, self._SEARCH_NEWEST,
                                                       " AND ".join(quoted), either, match), limit)
        return found

    def _first_then(self, conn: Connection, scope: str, limit: int, statement, first: str,
                    then, match) -> list[tuple[str, float]]:
        found = self._run(conn, statement, match(first), scope, limit)
        if then and len(found) < limit:
            found = _topped_up(found, self._run(conn, statement, match(then), scope, limit), limit)
        return found

    def _run(self, conn: Connection, statement, match: str, scope: str,
             limit: int) -> list[tuple[str, float]]:
        rows = conn.execute(statement, {"match": match, "scope": scope, "limit": limit,
                                        "newest": self.COMMON})
        return [(memory_id, -rank) for memory_id, rank in rows]


_COUNTED = 32  # MATCH expressions one counting statement holds


@lru_cache(maxsize=None)
def _counting(n: int):
    """How many rows each of n MATCH expressions (:m0 ...) finds, up to :cap: one row of n counts."""
    return text("SELECT " + ", ".join(f"(SELECT count(*) FROM (SELECT rowid FROM memories_fts "
                                      f"WHERE memories_fts MATCH :m{i} LIMIT :cap))" for i in range(n)))


def _matcher(scope: str, columns: str):
    """A MATCH expression of the scope's rows whose `columns` hold `expression` (or, not
    `scoped`, any row's)."""
    token = _scope_token(scope)

    def match(expression: str, scoped: bool = True) -> str:
        return f'scope : "{token}" AND {columns} : ({expression})' if scoped else f"{columns} : ({expression})"
    return match


def _topped_up(found: list[tuple[str, float]], more: list[tuple[str, float]],
               limit: int) -> list[tuple[str, float]]:
    """`found`, then the hits of `more` it lacks, up to `limit` in all."""
    have = {memory_id for memory_id, _ in found}
    return found + [hit for hit in more if hit[0] not in have][:limit - len(found)]


def _scope_token(scope: str) -> str:
    """The scope column's one token for `scope` (what the triggers store: 's' || hex(scope))."""
    return "s" + scope.encode("utf-8").hex()


def _fts5_levels(conn: Connection) -> int:
    """How many levels the FTS5 index has: read from its structure record (row 10 of
    memories_fts_data: a 4-byte cookie, a 4-byte mark in SQLite 3.45+, then the level count
    as a varint); 0 when there is none yet."""
    block = conn.execute(text("SELECT block FROM memories_fts_data WHERE id = 10")).scalar()
    at = 8 if block and block[4:8] == b"\xff\x00\x00\x01" else 4
    levels = 0
    for byte in (block or b"")[at:at + 4]:  # big-endian, 7 bits a byte, high bit: more follow
        levels = levels << 7 | byte & 0x7F
        if byte < 0x80:
            return levels
    return 0


# PostgreSQL: tsvector columns computed by the database itself, a GIN index on each. A
# tsvector holds at most 1 MB, so of a text longer than 2 * TSV_CHARS characters only the first
# and the last TSV_CHARS are indexed (the end of a long paste is often what is asked about).
TSV_CHARS = 50_000


def _indexed(column: str) -> str:
    return (f"CASE WHEN length({column}) <= {2 * TSV_CHARS} THEN {column} "
            f"ELSE left({column}, {TSV_CHARS}) || ' ' || right({column}, {TSV_CHARS}) END")


def _words(expression: str) -> str:
    """Punctuation as spaces: PostgreSQL's parser keeps `config.yaml`, `ops@acme.io` or a path
    as one token, where a query is split into words (text.terms) as FTS5 splits the text."""
    return f"to_tsvector('english'::regconfig, regexp_replace({expression}, '[[:punct:]]+', ' ', 'g'))"


_TSV_CONTENT = _words(_indexed("content"))
_TSV_ALL = _words(f"{_indexed('content')} || ' ' || left(coalesce(context, ''), {TSV_CHARS})")


def _pg_fts_create(conn: Connection) -> None:
    for statement in (
        f"ALTER TABLE memories ADD COLUMN fts_content tsvector GENERATED ALWAYS AS ({_TSV_CONTENT}) STORED",
        f"ALTER TABLE memories ADD COLUMN fts_all tsvector GENERATED ALWAYS AS ({_TSV_ALL}) STORED",
        "CREATE INDEX ix_memories_fts_content ON memories USING GIN (fts_content)",
        "CREATE INDEX ix_memories_fts_all ON memories USING GIN (fts_all)",
        "CREATE INDEX ix_memories_scope_seq ON memories (scope, seq)",  # a scope's newest rows, its size
    ):
        conn.execute(text(statement))


class PostgresKeywordIndex:
    """PostgreSQL full-text search ('english' snowball stemming), ranked by BM25.

    The tsvector columns are generated by the database, so every write keeps them in sync.
    `ts_rank` has no notion of how rare a word is, and recall fuses the keyword ranking with
    the vector one, so the order matters: rows are scored with BM25 over the tsvector's own
    term counts, with each word's document frequency counted in the scope. As with SQLite,
    the work per query is bounded: rarer words bring all their rows in as candidates; words
    held by more than COMMON rows of the scope bring only the newest COMMON rows holding all of
    them and the newest COMMON rows holding any of them. Frequencies are counted up to
    COMMON + 1 and the scope's size up to SIZE_CAP, so a word's IDF is exact in scopes of up to
    SIZE_CAP rows and every common word weighs the same above that.
    """

    COMMON = 2000
    SIZE_CAP = 10 * COMMON  # a scope counts as at most this many rows in a word's IDF
    K1, B = 1.2, 0.75
    migrations: list[Migration] = [("0001_pg_fts_memories", _pg_fts_create),
                                   ("0002_pg_outbox_statistics", outbox_without_statistics)]

    _LEXEMES = text("SELECT t.lexeme FROM unnest(CAST(:words AS text[])) WITH ORDINALITY AS w(word, n), "
                    "unnest(to_tsvector('english'::regconfig, w.word)) AS t GROUP BY t.lexeme ORDER BY min(w.n)")
    _COUNTS = "SELECT {counts} FROM unnest(CAST(:queries AS text[])) WITH ORDINALITY AS q(query, n) ORDER BY q.n"
    _COUNT = ("(SELECT count(*) FROM (SELECT 1 FROM memories WHERE scope = :scope AND {column} @@ "
              "CAST(q.query AS tsquery) LIMIT :cap) AS hits)")
    _SIZE = ("SELECT (SELECT count(*) FROM (SELECT 1 FROM memories WHERE scope = :scope LIMIT :cap) AS rows), "
             "{averages} FROM (SELECT {columns} FROM memories WHERE scope = :scope ORDER BY seq DESC LIMIT 1000) "
             "AS recent")
    _CANDIDATES = ("(SELECT seq, id, {column} AS tsv FROM memories WHERE scope = :scope AND "
                   "{column} @@ CAST(:{name} AS tsquery){newest})")
    _SCORE = ("WITH words AS (SELECT unnest(CAST(:lexemes AS text[])) AS lexeme, "
              "unnest(CAST(:idfs AS float8[])) AS idf), candidates AS ({candidates}) "
              "SELECT c.id, sum(w.idf * t.n * (:k1 + 1) / (t.n + :k1 * (1 - :b + :b * length(c.tsv) / :avgdl))) "
              "AS score FROM candidates AS c CROSS JOIN LATERAL "
              "(SELECT lexeme, coalesce(array_length(positions, 1), 1) AS n FROM unnest(c.tsv)) AS t "
              "JOIN words AS w ON w.lexeme = t.lexeme GROUP BY c.id, c.seq ORDER BY score DESC, c.seq DESC "
              "LIMIT :limit")

    def purge(self, conn: Connection, first: bool = True) -> bool:
        """Nothing to do in a transaction: a deleted row's tsvector goes with the row; the
        store's scrub vacuums the table and rebuilds the GIN indexes (_postgres.scrub)."""
        return False

    def matches(self, conn: Connection, scope: str, query: str, with_context: bool = False, every: bool = False,
                scored: bool = True, between: Optional[tuple[int, int]] = None):
        column = "fts_all" if with_context else "fts_content"
        words = terms(query)
        lexemes = list(conn.execute(self._LEXEMES, {"words": words}).scalars()) if words else []
        if not lexemes:
            return None
        statement = text((f"SELECT seq, ts_rank({column}, CAST(:kw_query AS tsquery)) AS score" if scored else
                          "SELECT seq") + f" FROM memories WHERE scope = :kw_scope AND {column} @@ CAST(:kw_query "
                         "AS tsquery)" + (" AND seq BETWEEN :kw_low AND :kw_high" if between else "")).bindparams(
            kw_query=(" & " if every else " | ").join(_quoted(lexeme) for lexeme in lexemes), kw_scope=scope)
        if between:
            statement = statement.bindparams(kw_low=between[0], kw_high=between[1])
        return statement.columns(seq=Integer, score=Float) if scored else statement.columns(seq=Integer)

    def search(self, conn: Connection, scope: str, query: str, limit: int,
               with_context: bool = False) -> list[tuple[str, float]]:
        return self.searches(conn, scope, query, limit, (with_context,))[0]

    def searches(self, conn: Connection, scope: str, query: str, limit: int,
                 views: tuple[bool, ...] = (False, True)) -> list[list[tuple[str, float]]]:
        """search() for each of `views` (with_context False, True): the query's lexemes, the
        scope's size and each lexeme's frequency in every view read once for all of them."""
        columns = ["fts_all" if with_context else "fts_content" for with_context in views]
        words = terms(query)
        lexemes = list(conn.execute(self._LEXEMES, {"words": words}).scalars()) if words else []
        if not lexemes:
            return [[] for _ in views]
        size, *averages = conn.execute(_statement(self._SIZE, columns), {"scope": scope, "cap": self.SIZE_CAP}).one()
        counts = conn.execute(_statement(self._COUNTS, columns), {
            "scope": scope, "queries": [_quoted(lexeme) for lexeme in lexemes], "cap": self.COMMON + 1}).all()
        return [self._scored(conn, scope, limit, column, lexemes, size, average, [row[i] for row in counts])
                for i, (column, average) in enumerate(zip(columns, averages))]

    def _scored(self, conn: Connection, scope: str, limit: int, column: str, lexemes: list[str], size: int,
                avgdl: float, counts: list[int]) -> list[tuple[str, float]]:
        """The BM25 ranking of `column` for `lexemes`, given the scope's size, the column's
        average length and each lexeme's frequency in it."""
        frequency = dict(zip(lexemes, counts))
        found = [lexeme for lexeme in lexemes if frequency[lexeme]]
        if not found:
            return []
        rare = [lexeme for lexeme in found if frequency[lexeme] <= self.COMMON]
        common = [lexeme for lexeme in found if lexeme not in rare]
        size = max(size, *frequency.values())
        parts, params = [], {"scope": scope, "limit": limit, "k1": self.K1, "b": self.B,
                             "avgdl": float(avgdl) or 1.0, "lexemes": found,
                             "idfs": [math.log((size - frequency[x] + 0.5) / (frequency[x] + 0.5) + 1)
                                      for x in found]}
        newest = " ORDER BY seq DESC LIMIT :newest"
        groups = [("rare", rare, " | ", ""), ("all_common", common if len(common) > 1 else [], " & ", newest),
                  ("common", common, " | ", newest)]
        for name, group, operator, limit_to in groups:
            if group:
                parts.append(self._CANDIDATES.format(column=column, name=name, newest=limit_to))
                params[name] = operator.join(_quoted(lexeme) for lexeme in group)
        params["newest"] = self.COMMON
        statement = text(self._SCORE.format(candidates=" UNION ".join(parts)))
        return [(memory_id, float(score)) for memory_id, score in conn.execute(statement, params)]


@lru_cache(maxsize=None)
def _formatted(template: str, columns: tuple[str, ...]):
    return text(template.format(
        counts=", ".join(PostgresKeywordIndex._COUNT.format(column=column) for column in columns),
        averages=", ".join(f"coalesce(avg(length({column})), 1)" for column in columns),
        columns=", ".join(columns)))


def _statement(template: str, columns: list[str]):
    """`template` (_SIZE, _COUNTS) for these tsvector columns, made once per shape."""
    return _formatted(template, tuple(columns))


def _quoted(lexeme: str) -> str:
    """A lexeme as a tsquery operand: quoted, so no character in it is tsquery syntax."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def keyword_index_for(dialect: str) -> KeywordIndex:
    """The keyword index implementation for a SQL dialect name."""
    if dialect == "sqlite":
        return SqliteKeywordIndex()
    if dialect == "postgresql":
        return PostgresKeywordIndex()
    raise NotImplementedError(f"No keyword index for the {dialect!r} database; use SQLite or PostgreSQL.")
