"""staging.db: what the template rule (extract/templates.py) found last time, kept so that a run redoes only what
its new extractions and changed conversations touch (issue 23). Derived data: emptied, it is built again.

- `template_extractions`: the current extractions the state was built from, one row per segment_extractions row
  (`seq`: its rowid, the order the rule reads them in), with the extraction's run (a rewritten one is another),
  its segment's conversation, the keys of the sentences it cites (a JSON list) and how many hypotheses it holds.
- `template_spans`: every evidence span of those extractions: the key of its sentence (`sentence_key`), its
  place in the reading order (seq, ord) and the message it cites.
- `template_repeated`: the sentences cited in `MIN_CONVERSATIONS` conversations or more: the text, where a second
  conversation first cited it (the rule's order of sentences) and the rule's decision (`found`: boilerplate).
- `template_places`: per repeated sentence, each conversation citing it (in order of first citation) with the
  message the rule reads there.
- `template_mark`: one row, the archive mark (staging/archive_changes.py) the state was built against.
- `template_drops`: per conversation whose unfinished hypotheses the rule dropped every one of in the last run,
  or whose hypotheses left unfinished by it are the ones it dropped (extract/template_drops.py), a digest of what
  it was, or will be, handed and how many it drops: a run handed the same skips it. Forgotten when the archive
  changes the conversation, and with the rest of the state.

`SCHEMA` is migration 11 of staging/migrations.py (frozen: change a table with a new migration there).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from staging.concepts import handled_inputs
from staging.db import IN_VALUES, json_values

SCHEMA = [
    """CREATE TABLE IF NOT EXISTS template_extractions (
        seq INTEGER PRIMARY KEY,
        segment_id TEXT NOT NULL,
        cache_key TEXT NOT NULL,
        extraction_run_id TEXT NOT NULL,
        conversation_id TEXT NOT NULL,
        sentence_keys TEXT NOT NULL,
        hypotheses INTEGER NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS template_extractions_by_conversation ON template_extractions (conversation_id)",
    """CREATE TABLE IF NOT EXISTS template_spans (
        sentence_key INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        ord INTEGER NOT NULL,
        message_id TEXT NOT NULL,
        PRIMARY KEY (sentence_key, seq, ord)
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS template_repeated (
        sentence_key INTEGER PRIMARY KEY,
        text TEXT NOT NULL,
        rank_seq INTEGER NOT NULL,
        rank_ord INTEGER NOT NULL,
        found INTEGER NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS template_places (
        sentence_key INTEGER NOT NULL,
        position INTEGER NOT NULL,
        conversation_id TEXT NOT NULL,
        message_id TEXT NOT NULL,
        PRIMARY KEY (sentence_key, position)
    ) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS template_places_by_message ON template_places (message_id)",
    "CREATE TABLE IF NOT EXISTS template_mark (id INTEGER PRIMARY KEY CHECK (id = 1), mark TEXT NOT NULL)",
    """CREATE TABLE IF NOT EXISTS template_drops (
        conversation_id TEXT PRIMARY KEY,
        signature TEXT NOT NULL,
        dropped INTEGER NOT NULL
    )""",
]
TABLES = (
    *("template_extractions", "template_spans", "template_repeated", "template_places", "template_mark"),
    "template_drops",
)

CURRENT = (
    "SELECT se.rowid, se.segment_id, se.cache_key, e.run_id, s.conversation_id FROM segment_extractions se"
    " JOIN extractions e ON e.cache_key = se.cache_key AND e.status = 'ok'"
    " JOIN segments s ON s.segment_id = se.segment_id AND s.retired_run_id IS NULL"
)

Extraction = tuple[int, str, str, str, str]  # seq, segment_id, cache_key, extraction run, conversation
Span = tuple[int, int, int, str]  # sentence key, seq, ord, message


def sentence_key(text: str) -> int:
    """A stable 64-bit key of an evidence sentence as the rule compares it (stripped): blake2b, not hash()."""
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True)


@dataclass(frozen=True, slots=True)
class Repeated:
    """A repeated sentence as stored: text, rank (where a second conversation first cited it), decision, places."""

    text: str
    rank: tuple[int, int]
    found: bool
    places: tuple[tuple[str, str], ...]  # (conversation, message), in order of first citation


def current(conn: sqlite3.Connection) -> list[Extraction]:
    """Every current extraction, in the order the rule reads them (segment_extractions' rowid)."""
    return [
        (int(r[0]), str(r[1]), str(r[2]), str(r[3]), str(r[4])) for r in conn.execute(f"{CURRENT} ORDER BY se.rowid")
    ]


def stored(conn: sqlite3.Connection) -> list[Extraction]:
    rows = conn.execute(
        "SELECT seq, segment_id, cache_key, extraction_run_id, conversation_id FROM template_extractions"
    )
    return [(int(r[0]), str(r[1]), str(r[2]), str(r[3]), str(r[4])) for r in rows]


def read_mark(conn: sqlite3.Connection) -> object:
    row = conn.execute("SELECT mark FROM template_mark WHERE id = 1").fetchone()
    return json.loads(row[0]) if row else None


def write_mark(conn: sqlite3.Connection, mark: object) -> None:
    conn.execute("INSERT OR REPLACE INTO template_mark (id, mark) VALUES (1, ?)", (json.dumps(mark),))


def clear(conn: sqlite3.Connection) -> None:
    for table in TABLES:
        conn.execute(f"DELETE FROM {table}")


def cited_by(conn: sqlite3.Connection, where: str, values: Iterable[str | int]) -> set[int]:
    """The keys of the sentences cited by the stored extractions whose `where` column is one of `values`."""
    rows = conn.execute(
        f"SELECT sentence_keys FROM template_extractions WHERE {where} IN {IN_VALUES}", (json_values(values),)
    )
    return {int(key) for r in rows for key in json.loads(r[0])}


def remove(conn: sqlite3.Connection, seqs: Sequence[int]) -> set[int]:
    """Forget these extractions and their spans; the keys of the sentences they cited.

    Each span is deleted by its own (sentence, extraction) pair: `sentence_key IN keys AND seq IN seqs` makes
    SQLite look up every key with every seq (the primary key's two columns), harmless for a day's few changed
    extractions and hours for an upgrade that changes them all (54k extractions citing 400k sentences at 250k
    messages)."""
    rows = conn.execute(
        f"SELECT seq, sentence_keys FROM template_extractions WHERE seq IN {IN_VALUES}", (json_values(seqs),)
    )
    pairs = [(int(key), int(seq)) for seq, cited in rows for key in json.loads(cited)]
    conn.executemany("DELETE FROM template_spans WHERE sentence_key = ? AND seq = ?", pairs)
    conn.execute(f"DELETE FROM template_extractions WHERE seq IN {IN_VALUES}", (json_values(seqs),))
    return {key for key, _ in pairs}


def add(
    conn: sqlite3.Connection, extractions: Iterable[Extraction], spans: list[Span], sizes: Mapping[int, int]
) -> None:
    """Store these extractions (`sizes`: seq -> how many hypotheses) and their spans."""
    cited: dict[int, dict[int, None]] = {}
    for key, seq, _, _ in spans:
        cited.setdefault(seq, {})[key] = None
    conn.executemany(
        "INSERT INTO template_extractions (seq, segment_id, cache_key, extraction_run_id, conversation_id,"
        " sentence_keys, hypotheses) VALUES (?, ?, ?, ?, ?, ?, ?)",
        [(*e, json.dumps(list(cited.get(e[0], ()))), sizes[e[0]]) for e in extractions],
    )
    conn.executemany(
        "INSERT OR IGNORE INTO template_spans (sentence_key, seq, ord, message_id) VALUES (?, ?, ?, ?)",
        sorted(spans),  # in key order: each insert lands at the end of the table's b-tree or near the last
    )


def hypotheses(conn: sqlite3.Connection, cache_keys: Iterable[str]) -> dict[str, str]:
    """Cache key -> the JSON list of hypotheses stored for it."""
    rows = conn.execute(
        f"SELECT cache_key, hypotheses FROM extractions WHERE cache_key IN {IN_VALUES}", (json_values(cache_keys),)
    )
    return {str(r[0]): str(r[1] or "[]") for r in rows}


def citations(conn: sqlite3.Connection, keys: Iterable[int]) -> dict[int, list[tuple[int, int, str, str]]]:
    """Sentence key -> its spans (seq, ord, conversation, message) in reading order."""
    found: dict[int, list[tuple[int, int, str, str]]] = {}
    rows = conn.execute(
        "SELECT s.sentence_key, s.seq, s.ord, e.conversation_id, s.message_id FROM template_spans s"
        " JOIN template_extractions e ON e.seq = s.seq"
        f" WHERE s.sentence_key IN {IN_VALUES} ORDER BY s.sentence_key, s.seq, s.ord",
        (json_values(keys),),
    )
    for key, seq, ord_, conversation, message in rows:
        found.setdefault(int(key), []).append((int(seq), int(ord_), str(conversation), str(message)))
    return found


def repeated(conn: sqlite3.Connection, keys: Iterable[int]) -> dict[int, Repeated]:
    """The stored repeated sentences among `keys`, with their places."""
    wanted = json_values(keys)
    places: dict[int, list[tuple[str, str]]] = {}
    for key, conversation, message in conn.execute(
        "SELECT sentence_key, conversation_id, message_id FROM template_places"
        f" WHERE sentence_key IN {IN_VALUES} ORDER BY sentence_key, position",
        (wanted,),
    ):
        places.setdefault(int(key), []).append((str(conversation), str(message)))
    return {
        int(r[0]): Repeated(str(r[1]), (int(r[2]), int(r[3])), bool(r[4]), tuple(places.get(int(r[0]), ())))
        for r in conn.execute(
            "SELECT sentence_key, text, rank_seq, rank_ord, found FROM template_repeated"
            f" WHERE sentence_key IN {IN_VALUES}",
            (wanted,),
        )
    }


def placed_at(conn: sqlite3.Connection, messages: Iterable[str]) -> dict[str, list[tuple[int, str, int, int]]]:
    """Message -> the repeated sentences placed at it: (key, text, rank seq, rank ord), one per place."""
    found: dict[str, list[tuple[int, str, int, int]]] = {}
    rows = conn.execute(
        "SELECT p.message_id, r.sentence_key, r.text, r.rank_seq, r.rank_ord FROM template_places p"
        f" JOIN template_repeated r ON r.sentence_key = p.sentence_key WHERE p.message_id IN {IN_VALUES}",
        (json_values(messages),),
    )
    for message, key, text, rank_seq, rank_ord in rows:
        found.setdefault(str(message), []).append((int(key), str(text), int(rank_seq), int(rank_ord)))
    return found


def write_repeated(conn: sqlite3.Connection, gone: Iterable[int], now: dict[int, Repeated]) -> None:
    """Replace the stored rows of `gone` (no longer repeated) and of `now` (repeated, as given)."""
    keys = json_values([*gone, *now])
    conn.execute(f"DELETE FROM template_places WHERE sentence_key IN {IN_VALUES}", (keys,))
    conn.execute(f"DELETE FROM template_repeated WHERE sentence_key IN {IN_VALUES}", (keys,))
    conn.executemany(
        "INSERT INTO template_repeated (sentence_key, text, rank_seq, rank_ord, found) VALUES (?, ?, ?, ?, ?)",
        [(key, r.text, r.rank[0], r.rank[1], int(r.found)) for key, r in now.items()],
    )
    conn.executemany(
        "INSERT INTO template_places (sentence_key, position, conversation_id, message_id) VALUES (?, ?, ?, ?)",
        [(key, i, c, m) for key, r in now.items() for i, (c, m) in enumerate(r.places)],
    )


def set_found(conn: sqlite3.Connection, decisions: dict[int, bool]) -> None:
    conn.executemany(
        "UPDATE template_repeated SET found = ? WHERE sentence_key = ?",
        [(int(found), key) for key, found in decisions.items()],
    )


# The conversations holding a boilerplate sentence: the found sentences first, then each one's places by the primary
# key. Without CROSS JOIN, SQLite (no statistics) walked every place by its message index and looked its sentence
# up: 4.9 s at 1M messages (1.06M places, 21.5k found sentences) against 0.26 s in this order.
HOLDING = (
    "SELECT DISTINCT p.conversation_id FROM template_repeated r"
    " CROSS JOIN template_places p ON p.sentence_key = r.sentence_key WHERE r.found = 1 ORDER BY 1"
)


def found(conn: sqlite3.Connection) -> tuple[list[str], list[str]]:
    """The boilerplate sentences, and the conversations that hold one (sorted)."""
    sentences = [str(r[0]) for r in conn.execute("SELECT text FROM template_repeated WHERE found = 1")]
    holding = [str(r[0]) for r in conn.execute(HOLDING)]
    return sentences, holding


def found_keys(conn: sqlite3.Connection) -> set[int]:
    """The keys of the boilerplate sentences (what a run compares before and after deciding)."""
    return {int(r[0]) for r in conn.execute("SELECT sentence_key FROM template_repeated WHERE found = 1")}


def texts_of(conn: sqlite3.Connection, keys: Iterable[int]) -> list[str]:
    rows = conn.execute(f"SELECT text FROM template_repeated WHERE sentence_key IN {IN_VALUES}", (json_values(keys),))
    return [str(r[0]) for r in rows]


def citing(conn: sqlite3.Connection, keys: Iterable[int]) -> set[str]:
    """The conversations whose stored extractions cite one of these sentences (by their spans, key first)."""
    rows = conn.execute(
        "SELECT DISTINCT t.conversation_id FROM json_each(?) k CROSS JOIN template_spans s ON s.sentence_key = k.value"
        " JOIN template_extractions t ON t.seq = s.seq",
        (json_values(keys),),
    )
    return {str(r[0]) for r in rows}


def drops(conn: sqlite3.Connection) -> dict[str, tuple[str, int]]:
    """Conversation -> (signature, hypotheses dropped) of the replays remembered."""
    return {str(r[0]): (str(r[1]), int(r[2])) for r in conn.execute("SELECT * FROM template_drops")}


def forget_drops(conn: sqlite3.Connection, conversations: Iterable[str]) -> None:
    conn.execute(f"DELETE FROM template_drops WHERE conversation_id IN {IN_VALUES}", (json_values(conversations),))


def remember_drops(conn: sqlite3.Connection, replays: dict[str, tuple[str, int]]) -> None:
    conn.executemany(
        "INSERT OR REPLACE INTO template_drops (conversation_id, signature, dropped) VALUES (?, ?, ?)",
        [(c, signature, dropped) for c, (signature, dropped) in replays.items()],
    )


def sentences_cited(conn: sqlite3.Connection, cache_keys: Iterable[str]) -> dict[str, set[int]]:
    """Cache key -> the keys of the sentences its stored extraction cites (every span, as `sentence_key` keys them)."""
    cited: dict[str, set[int]] = {}
    rows = conn.execute(
        f"SELECT cache_key, sentence_keys FROM template_extractions WHERE cache_key IN {IN_VALUES}",
        (json_values(cache_keys),),
    )
    for cache_key, keys in rows:
        cited.setdefault(str(cache_key), set()).update(int(k) for k in json.loads(keys))
    return cited


def hypothesis_counts(conn: sqlite3.Connection, cache_keys: Iterable[str]) -> dict[str, int]:
    """Cache key -> how many hypotheses its stored extraction holds."""
    rows = conn.execute(
        f"SELECT cache_key, hypotheses FROM template_extractions WHERE cache_key IN {IN_VALUES}",
        (json_values(cache_keys),),
    )
    return {str(r[0]): int(r[1]) for r in rows}


def unfinished_inputs(conn: sqlite3.Connection, skip: Iterable[str] = ()) -> dict[str, set[str]]:
    """`staging.concepts.unfinished_inputs` from the stored extractions (current since the state's last update),
    whose hypotheses are counted here once: no JSON is parsed, by Python or SQLite. The extractions of the
    conversations in `skip` are not looked at (those the template rule would drop every hypothesis of again:
    extract/template_drops.py; at 1M generated messages, 9 of 10 stored extractions)."""
    unfinished = [
        str(row[0])
        for row in conn.execute(
            "SELECT DISTINCT t.cache_key FROM template_extractions t"
            f" WHERE t.conversation_id NOT IN {IN_VALUES}"
            " AND (SELECT COUNT(*) FROM concept_inputs i"
            "      WHERE i.input_key > t.cache_key || ':' AND i.input_key < t.cache_key || ';'"
            "      AND CAST(substr(i.input_key, length(t.cache_key) + 2) AS INTEGER) < t.hypotheses)"
            " < t.hypotheses",
            (json_values(skip),),
        )
    ]
    return handled_inputs(conn, unfinished)
