"""The concept resolver's index kept in staging.db between runs (issue 23), so that a scheduled run costs what it
asks about, not the store: building the index of every concept's names was ~3-4 CPU-s of each quiet day at 250k
messages (42k concepts) for ~200 new hypotheses.

    resolver = resolver_for(conn, concepts, make)   # `make()`: an empty `extract.resolve.Resolver`

The index a run starts from is a function of the concept rows: in the order (merged last, then concept id), each
row's names [title, *aliases] go to its survivor (the owner), and a match key belongs to the owner of the first
row naming it. `resolver_for` first brings the stored index (staging/resolver_state.py) to the rows as they are
now: the rows whose (merged, owner, owner's type, names) changed since it was stored, the match keys they name or
named, every row claiming one of those keys, and the owners of all of these are the owners whose entries can
differ; their stored entries are dropped and their rows (all rows whose owner they are) added again in the
resolver's order through the resolver's own `add`, against the other owners' stored keys. An owner not among
them keeps its entry: no row of it changed and every key it claims is claimed by unchanged rows only, so who owns
each of those keys is decided as before. Then the run gets a resolver whose dictionaries fault each key in from
the stored tables on first use and keep it in memory (the run's own additions, merges and retypes change only
memory); the typo index's vocabulary is read whole (one column). With no stored index, another version of it, or
half the rows changed, the index is built in memory from every row as before and stored in full. The concepts
stage brings the stored index up to date once more in its last transaction (`bring_up_to_date`), over the rows as
it leaves them: what staging.db keeps is then the index of its concept rows, the same after a run killed and re-run
as after a clean run, and the next run starts with only the changes made since (the garden's).

The stored index equals a full build's (`stored_state` against `memory_state`, tests/test_resolve_stored.py), so
every decision is the one a full build gives.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from extract.resolve import Resolver, _Entry, _keys, tokens
from extract.text import STOPWORDS, match_key, name_key
from staging import resolver_state as state
from staging.concepts import ConceptRow, survivor
from staging.db import Transaction
from staging.resolver_state import RowSig, StoredEntry

VERSION = 1  # of the stored keys: raise it when name_key, match_key, tokens or resolve._keys change
# Names whose keys stand for the key functions in keys_version: case, plurals, punctuation, digits, accents, width,
# symbols kept in names (C++, C#), stop words
_PROBES = (
    "AWS Glue",
    "PostgreSQL 16",
    "Spanish lessons",
    "role-based access control",
    "Caf\u00e9 Z\u00fcrich",
    "the  Data-Sets of the year",
    "\uff21\uff22\uff23 tools",
    "na\u00efve Bayes",
    "C++ and C#",
    "Python 3.11",
    "Mom's 60th birthday",
)
FULL_SHARE = 0.5  # rows changed above this share of the store: build in full
_SEP, _WORDS = "\x1f", "\x1e"
_ABSENT: Any = object()
IndexKey = tuple[object, ...]


def keys_version() -> int:
    """What the stored index's keys were made with: VERSION, and a digest of the keys that name_key, match_key,
    tokens and resolve._keys make of fixed probe names, of the stop words and of Python's Unicode tables. A change
    to any of them that nobody marked by raising VERSION (a stop word added, another Python) still builds the kept
    index again instead of mixing old keys with new ones. 56 bits: it fits SQLite's INTEGER."""

    def plain(value: object) -> object:  # frozensets in a fixed order: a digest must not follow hash seeds
        if isinstance(value, frozenset | set):
            return sorted(plain(v) for v in value)  # type: ignore[type-var]
        if isinstance(value, tuple | list):
            return [plain(v) for v in value]
        return value

    probe: list[object] = [VERSION, unicodedata.unidata_version, sorted(STOPWORDS)]
    for name in _PROBES:
        words = tokens(name)
        probe.append([name_key(name), match_key(name), list(words), plain(_keys("tool", name_key(name), words))])
    digest = hashlib.sha256(json.dumps(probe, ensure_ascii=True).encode()).digest()
    return int.from_bytes(digest[:7], "big")


def encode_index_key(key: IndexKey) -> str:
    """One of `extract.resolve._keys`'s tuples as text (and back with `decode_index_key`)."""
    kind, concept_type = str(key[0]), str(key[1])
    if kind == "words":
        payload = _WORDS.join(sorted(str(w) for w in key[2]))  # type: ignore[attr-defined]
    elif kind == "longer":
        payload = f"{key[2]}{_SEP}{'' if key[3] is None else key[3]}"
    else:
        payload = str(key[2])
    return f"{kind}{_SEP}{concept_type}{_SEP}{payload}"


def decode_index_key(text: str) -> IndexKey:
    kind, concept_type, payload = text.split(_SEP, 2)
    if kind == "words":
        return (kind, concept_type, frozenset(payload.split(_WORDS)) if payload else frozenset())
    if kind == "longer":
        word, length = payload.split(_SEP)
        return (kind, concept_type, word, int(length) if length else None)
    return (kind, concept_type, payload)


def row_signatures(concepts: Mapping[str, ConceptRow], ids: Iterable[str] | None = None) -> dict[str, RowSig]:
    """What the resolver reads of each concept row (as `ConceptLoop` builds it); `ids`: of these rows only."""
    out: dict[str, RowSig] = {}
    for concept_id in concepts if ids is None else (c for c in ids if c in concepts):
        row = concepts[concept_id]
        owner = survivor(concepts, concept_id)
        names = json.dumps([row.title, *row.aliases], ensure_ascii=False)
        out[concept_id] = RowSig(int(row.state == "merged"), owner, concepts[owner].type, names)
    return out


def _ordered(rows: Iterable[tuple[str, RowSig]]) -> list[tuple[str, RowSig]]:
    return sorted(rows, key=lambda item: (item[1].merged, item[0]))


def _claims(sig: RowSig) -> set[str]:
    return {key for key in (match_key(n) for n in json.loads(sig.names)) if key}


class _Recorder:
    """Stands in for the resolver's typo index while rows are added: records the words each add gives it."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.words: list[str] = []

    def add_words(self, words: tuple[str, ...]) -> None:
        self.words.extend(words)
        self.inner.add_words(words)


def _add_rows(resolver: Resolver, rows: list[tuple[str, RowSig]]) -> dict[str, set[str]]:
    """`Resolver.add` for each row in order; the words each owner gave the typo index."""
    recorder = _Recorder(resolver._typos)
    resolver._typos = recorder  # type: ignore[assignment]
    given: dict[str, set[str]] = {}
    try:
        for _, sig in rows:
            recorder.words = []
            resolver.add(sig.owner, sig.type, json.loads(sig.names))
            given.setdefault(sig.owner, set()).update(recorder.words)
    finally:
        resolver._typos = recorder.inner
    return given


def _stored_entry(resolver: Resolver, owner: str, words: set[str]) -> StoredEntry:
    entry = resolver._entries[owner]
    held = resolver._index_keys.get(owner) or ()
    return StoredEntry(
        owner,
        entry.type,
        list(entry.names.items()),
        sorted(entry.keys),
        sorted(encode_index_key(k) for k in held),
        sorted(words),
    )


class _Faulting:
    """A dict read through to the stored index: each key is loaded on first use, then lives in memory."""

    __slots__ = ("_data", "_load")

    def __init__(self, load: Callable[[Any], Any]) -> None:
        self._data: dict[Any, Any] = {}
        self._load = load

    def _value(self, key: Any) -> Any:
        try:
            return self._data[key]
        except KeyError:
            value = self._data[key] = self._load(key)
            return value

    def get(self, key: Any, default: Any = None) -> Any:
        value = self._value(key)
        return default if value is _ABSENT else value

    def __getitem__(self, key: Any) -> Any:
        value = self._value(key)
        if value is _ABSENT:
            raise KeyError(key)
        return value

    def __contains__(self, key: Any) -> bool:
        return self._value(key) is not _ABSENT

    def __setitem__(self, key: Any, value: Any) -> None:
        self._data[key] = value

    def setdefault(self, key: Any, default: Any = None) -> Any:
        value = self._value(key)
        if value is _ABSENT:
            self._data[key] = default
            return default
        return value

    def pop(self, key: Any, *default: Any) -> Any:
        value = self._value(key)
        if value is _ABSENT:
            if default:
                return default[0]
            raise KeyError(key)
        self._data[key] = _ABSENT
        return value


def _read_through(conn: sqlite3.Connection, resolver: Resolver) -> Resolver:
    """Point the resolver's dictionaries at the stored index (read on first use of each key)."""

    def exact(key: str) -> Any:
        owner = state.exact_owner(conn, key)
        return _ABSENT if owner is None else owner

    def entry(owner: str) -> Any:
        stored = state.entry(conn, owner)
        if stored is None:
            return _ABSENT
        return _Entry(owner, stored.type, dict(stored.names), set(stored.keys))

    def held(owner: str) -> Any:
        stored = state.entry(conn, owner)
        if stored is None or not stored.index_keys:
            return _ABSENT
        return {decode_index_key(k) for k in stored.index_keys}

    def holders(key: IndexKey) -> Any:
        return state.index_holders(conn, encode_index_key(key)) or _ABSENT

    resolver.exact = _Faulting(exact)  # type: ignore[assignment]
    resolver._entries = _Faulting(entry)  # type: ignore[assignment]
    resolver._index_keys = _Faulting(held)  # type: ignore[assignment]
    resolver._index = _Faulting(holders)  # type: ignore[assignment]
    return resolver


def resolver_for(
    conn: sqlite3.Connection, concepts: Mapping[str, ConceptRow], make: Callable[[], Resolver]
) -> Resolver:
    """The resolver for a run over `concepts` (the store as the run starts, as `concepts` holds it); the stored
    index brought up to date first (its own transaction)."""
    with Transaction(conn):
        built = bring_up_to_date(conn, concepts, make)
    if built is not None:
        return built
    resolver = _read_through(conn, make())
    resolver._typos.add_words(tuple(state.vocabulary(conn)))
    return resolver


def bring_up_to_date(
    conn: sqlite3.Connection, concepts: Mapping[str, ConceptRow], make: Callable[[], Resolver]
) -> Resolver | None:
    """Make the stored index the index of `concepts` (the concept rows as the caller's transaction holds them).
    Returns the resolver built in memory when it was built in full, else None (the stored tables are the index).

    The concepts stage calls it twice: as a run starts (`resolver_for`), and in its last transaction over the rows
    as the run leaves them. The second keeps the stored index a function of the concept rows: a run killed after
    some of its batches committed and re-run starts from those rows, not from the store the clean run started
    from, and would otherwise leave the index of another store than a clean run (the same decisions, other rows)."""
    if state.version(conn) != keys_version() or not state.has_rows(conn):
        return _build(conn, concepts, make)
    direct = state.changed_rows(conn)  # rows whose own columns changed; and the rows that can follow them:
    if direct:  # a row's owner and its type change only with a row on its merge chain, all of one owner
        reach = direct | set(state.rows_owned_by(conn, direct | state.owners_of(conn, direct)))
        old = state.load_rows(conn, reach)
        new = row_signatures(concepts, reach)
        changed = sorted(c for c in reach if old.get(c) != new.get(c))
        if len(changed) > FULL_SHARE * max(1, len(concepts)):
            return _build(conn, concepts, make)
        if changed:
            _update(conn, old, new, changed, make)
        state.sync_row_columns(conn, direct)
    return None


def _build(conn: sqlite3.Connection, concepts: Mapping[str, ConceptRow], make: Callable[[], Resolver]) -> Resolver:
    """Every row into a resolver in memory (as a run did before), stored in full."""
    state.clear(conn, keys_version())
    resolver = make()
    rows = _ordered(row_signatures(concepts).items())
    given = _add_rows(resolver, rows)
    state.put_rows(conn, rows)
    state.sync_row_columns(conn)
    state.put_claims(conn, ((key, c) for c, sig in rows for key in _claims(sig)))
    state.put_entries(conn, (_stored_entry(resolver, owner, words) for owner, words in sorted(given.items())))
    return resolver


def _update(
    conn: sqlite3.Connection,
    old: dict[str, RowSig],
    new: dict[str, RowSig],
    changed: list[str],
    make: Callable[[], Resolver],
) -> None:
    """Redo the entries of the owners the changed rows can reach (see the module's doc); `old` and `new` hold at
    least the changed rows (a row in neither is gone, or new)."""
    touched: set[str] = set()
    for concept_id in changed:
        for sig in (old.get(concept_id), new.get(concept_id)):
            if sig is not None:
                touched |= _claims(sig)
    claimants = state.claimants(conn, touched)
    unchanged = state.load_rows(conn, claimants - set(changed))  # their stored row is their row now
    affected: set[str] = set()
    for concept_id in claimants | set(changed):
        for sig in (old.get(concept_id), new.get(concept_id), unchanged.get(concept_id)):
            if sig is not None:
                affected.add(sig.owner)
    for owner in sorted(affected):
        stored = state.entry(conn, owner)
        if stored is not None:
            state.drop_entry(conn, stored)
    state.drop_claims(conn, [(key, c) for c in changed if c in old for key in _claims(old[c])])
    state.drop_rows(conn, [c for c in changed if c not in new])
    state.put_rows(conn, [(c, new[c]) for c in changed if c in new])
    state.put_claims(conn, [(key, c) for c in changed if c in new for key in _claims(new[c])])
    resolver = _read_through(conn, make())
    given = _add_rows(resolver, _ordered(state.rows_owned_by(conn, affected).items()))
    state.put_entries(conn, (_stored_entry(resolver, owner, words) for owner, words in sorted(given.items())))


# ---------------------------------------------------------------- the equality the tests check


def memory_state(resolver: Resolver) -> dict[str, Any]:
    """A resolver built in memory, as comparable values."""
    return {
        "exact": dict(resolver.exact),
        "entries": {o: (e.type, list(e.names.items()), sorted(e.keys)) for o, e in resolver._entries.items()},
        "index_keys": {
            o: sorted(encode_index_key(k) for k in held) for o, held in resolver._index_keys.items() if held
        },
        "index": {encode_index_key(k): sorted(v) for k, v in resolver._index.items() if v},
        "vocabulary": sorted(resolver._typos._words),
    }


def stored_state(conn: sqlite3.Connection) -> dict[str, Any]:
    """The stored index, as `memory_state` gives a full build's."""
    entries: dict[str, Any] = {}
    index_keys: dict[str, list[str]] = {}
    for (owner,) in conn.execute("SELECT owner FROM resolver_entries"):
        stored = state.entry(conn, str(owner))
        assert stored is not None
        entries[stored.owner] = (stored.type, stored.names, sorted(stored.keys))
        if stored.index_keys:
            index_keys[stored.owner] = sorted(stored.index_keys)
    index: dict[str, list[str]] = {}
    for key, owner in conn.execute("SELECT index_key, owner FROM resolver_index ORDER BY index_key, owner"):
        index.setdefault(str(key), []).append(str(owner))
    return {
        "exact": {str(k): str(o) for k, o in conn.execute("SELECT key, owner FROM resolver_exact")},
        "entries": entries,
        "index_keys": index_keys,
        "index": index,
        "vocabulary": state.vocabulary(conn),
    }
