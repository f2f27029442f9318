"""The embedded engine's memory: one cues run loaded from staging.db into arrays and sparse matrices.

    MemoryIndex
      content   ids, conversation / day / role codes, seq, time (epoch s), tokens, merged-group head
      lexical   BM25 over the content keys (messages expanded with their cue names), BM25 over cue names
      dense     the embed stage's message vectors (the configured embedder), embedded here when missing
      graph     cue -> content and cue -> conversation-tag weights (sparse), content -> conversation, day

Built once per process (`load_index`), then every recall is array arithmetic over it (memory/recall.py).
Merged nodes are represented by their first original (`head`): recall scores the originals and shows the group
once, with every original message id.
"""

from __future__ import annotations

import sqlite3
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from itertools import pairwise
from typing import TYPE_CHECKING, Any, overload

import numpy as np

from clients.embedders import Embedder, OnnxMiniLM, build_embedder
from contracts.errors import ChatmemError
from contracts.fact_rules import FactRow
from memory.dense_lists import PrepassTables, principal_directions
from memory.key_model import STATIC, for_run, with_model
from memory.names import NAMED_ROLES, Names, speaker_names
from memory.session import SessionKeys, session_keys
from memory.sparse import CSR
from memory.text import BM25, TermCounts, terms
from staging import embeddings as vectors
from staging import memory as store
from staging import memory_inputs as inputs
from staging.db import read_snapshot
from staging.memory import ContentRow, CueRow, MemoryGraph

if TYPE_CHECKING:  # pydantic: never imported by a recall that only reads (flows/cli_memory.py)
    from contracts.settings import Settings
    from memory.index_reuse import Reuse

Array = np.ndarray[Any, Any]
COARSE_FROM = 150_000  # content nodes from which dense similarity takes a coarse pass first
COARSE_DIM = 64
RESCORE = 3_000
VECTOR_CHUNK = 5_000  # key vectors read from staging.db per query


def epoch(value: str | None) -> float:
    """ISO time -> epoch seconds (UTC when no zone is given); NaN when unknown or unreadable."""
    if not value:
        return float("nan")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return float("nan")
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


@dataclass
class MemoryIndex:
    run_id: str
    ids: Sequence[str]  # a list, or memory.index_store's column read from the stored index
    conversation_ids: Sequence[str]
    conversation: Array  # int code per content
    seq: Array
    roles: list[str]
    role_code: Array
    times: Array  # epoch seconds, NaN when unknown
    day: Array  # int code per content, -1 when unknown
    tokens: Array
    source: Array  # int code per content
    sources: list[str]
    head: Array  # index of the merged group's first original (itself when not merged)
    group: Mapping[int, list[int]]  # head -> every original's index
    bm25: BM25
    dense: Array  # n x dim float32 (zero rows: no vector)
    cue_ids: Sequence[str]
    cue_names: Sequence[str]
    cue_idf: Array
    cue_hub: Array
    cue_bm25: BM25
    cue_content: CSR  # cues x content
    cue_conversation: CSR  # cues x conversations
    content_cue: CSR  # content x cues (the transpose, for "which cue brought this piece")
    conversation_code: Mapping[str, int]
    prev: Array  # index of the previous content of the same conversation (NEXT order), -1 at the start
    next: Array  # index of the next one, -1 at the end
    titles: Mapping[str, str | None] = field(default_factory=dict)  # a dict, or index_store.ArchiveTitles
    facts: list[FactRow] = field(default_factory=list)  # the garden's facts (memory/fact_boost.py)
    fact_positions: dict[str, int] = field(default_factory=dict)  # their messages' content index
    texts: Mapping[str, str] = field(default_factory=dict)  # a dict, or memory.index_store.ArchiveTexts
    position: Mapping[str, int] = field(default_factory=dict)  # content id -> index

    names: Names = field(default_factory=Names)  # the speakers' names, masked out of what the embedder reads
    speaker: Array | None = None  # per content: its speaker's position in `names.names`, -1 when unnamed
    asks: Array | None = None  # per content: it asks something (a '?'): its NEXT is the reply
    sessions: SessionKeys | None = None  # one key per conversation (memory/session.py)
    coarse: Array | None = None  # n x 64 projection of `dense` (large memories only), see `similarity`
    projection: Array | None = None  # 384 x 64
    prepass: PrepassTables | None = None  # recall's candidate pre-pass tables (memory/candidates.py), large only
    days: Sequence[str] = field(default_factory=list)  # the day each `day` code stands for (sorted)

    @property
    def size(self) -> int:
        return len(self.ids)

    def similarity(self, query: Array) -> Array:
        """Cosine of every key with the query. Beyond COARSE_FROM content nodes, reading every 384-d vector costs
        more than a recall may (n x 1.5 KB per query): a 64-d projection (the top principal directions of a
        seeded sample) scores everything, and the best RESCORE are scored exactly."""
        query = query.astype(np.float32)
        if self.coarse is None or self.projection is None:
            return np.asarray(self.dense @ query, dtype=np.float32)
        scores = np.asarray(self.coarse @ (self.projection.T @ query), dtype=np.float32)
        best = np.argpartition(-scores, min(RESCORE, len(scores) - 1))[:RESCORE]
        scores[best] = self.dense[best] @ query
        return scores

    def add_projection(self, seed: int = 7) -> None:
        """Prepare `similarity`'s coarse pass (done by `build_index` for large memories)."""
        rng = np.random.default_rng(seed)
        sample = self.dense[rng.choice(self.size, min(self.size, 20_000), replace=False)]
        self.projection = principal_directions(sample, COARSE_DIM)
        self.coarse = np.ascontiguousarray(self.dense @ self.projection, dtype=np.float32)

    def text(self, index: int) -> str:
        return self.texts.get(self.ids[index], "")


class Subset(Sequence[str]):
    """The strings of `base` at `keep` (a view's content ids), read when asked: a view of a stored index keeps
    thousands of content, of which a recall shows tens."""

    def __init__(self, base: Sequence[str], keep: Array) -> None:
        self._base = base
        self._keep = keep

    def __len__(self) -> int:
        return len(self._keep)

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> list[str]: ...
    def __getitem__(self, i: int | slice) -> str | list[str]:
        if isinstance(i, slice):
            return [self._base[int(k)] for k in self._keep[i]]
        return self._base[int(self._keep[i])]


def _codes(values: Sequence[str | None]) -> tuple[Array, list[str]]:
    names = sorted({v for v in values if v is not None})
    lookup = {v: i for i, v in enumerate(names)}
    return np.array([lookup[v] if v is not None else -1 for v in values], dtype=np.int64), names


def _merged_groups(rows: Sequence[ContentRow], ids: Sequence[str]) -> tuple[Array, dict[int, list[int]]]:
    """(head, group): each content's merged group's first original (itself when not merged), and every group's
    originals in order, keyed by its head."""
    head = np.arange(len(rows), dtype=np.int64)
    group: dict[int, list[int]] = {}
    members: dict[str, list[int]] = {}
    for i, c in enumerate(rows):
        if c.merged_into:
            members.setdefault(c.merged_into, []).append(i)
    for originals in members.values():
        first = min(originals, key=lambda i: (int(rows[i].seq), ids[i]))
        head[originals] = first
        group[first] = sorted(originals, key=lambda i: int(rows[i].seq))
    return head, group


def _cue_matrices(
    edges: Iterable[tuple[str, str, str, float]],
    cue_ids: Sequence[str],
    position: Mapping[str, int],
    conversation_ids: Sequence[str],
) -> tuple[CSR, CSR]:
    """(cues x content, cues x conversations) weights from the cue-content and cue-tag edges, built with scipy
    (duplicates summed, as recall has always read them) and kept as plain arrays (memory/sparse.py)."""
    from scipy.sparse import csr_matrix  # build time only: a recall reads the arrays

    cue_position = {c: i for i, c in enumerate(cue_ids)}
    conv_position = {f"conv:{c}": i for i, c in enumerate(conversation_ids)}
    cc_r, cc_c, cc_w = array("q"), array("q"), array("d")  # flat arrays: a Python list of numbers costs ~4x
    ct_r, ct_c, ct_w = array("q"), array("q"), array("d")
    for kind, src, dst, weight in edges:
        if kind == "cue-content" and dst in position:
            cc_r.append(cue_position[src])
            cc_c.append(position[dst])
            cc_w.append(weight)
        elif kind == "cue-tag" and dst in conv_position:
            ct_r.append(cue_position[src])
            ct_c.append(conv_position[dst])
            ct_w.append(weight)
    cue_content = csr_matrix(
        (np.array(cc_w), (np.array(cc_r), np.array(cc_c))), shape=(len(cue_ids), len(position)), dtype=np.float32
    )
    cue_conversation = csr_matrix(
        (np.array(ct_w), (np.array(ct_r), np.array(ct_c))),
        shape=(len(cue_ids), len(conversation_ids)),
        dtype=np.float32,
    )
    return CSR.of(cue_content), CSR.of(cue_conversation)


def _neighbours(conversation: Array, seq: Array, rank: Array) -> tuple[Array, Array]:
    """(prev, next): each content's neighbour in its conversation (by seq, then id), -1 at either end. The
    conversation codes number the conversations in sorted order and `rank` numbers the ids in sorted order: one
    numpy sort, the order the rows' (conversation id, seq, id) give."""
    n = len(conversation)
    prev = np.full(n, -1, dtype=np.int64)
    nxt = np.full(n, -1, dtype=np.int64)
    if n < 2:
        return prev, nxt
    along = np.lexsort((rank, seq, conversation))
    a, b = along[:-1], along[1:]
    same = conversation[a] == conversation[b]
    nxt[a[same]] = b[same]
    prev[b[same]] = a[same]
    return prev, nxt


def id_rank(ids: Sequence[str]) -> Array:
    """Each id's place in sorted order (positions themselves when the ids are sorted, as staging.db gives them)."""
    if all(a < b for a, b in pairwise(ids)):
        return np.arange(len(ids), dtype=np.int64)
    rank = np.empty(len(ids), dtype=np.int64)
    rank[sorted(range(len(ids)), key=ids.__getitem__)] = np.arange(len(ids))
    return rank


@dataclass
class Columns:
    """The per-content columns of an index, from the content rows (`columns_of`) or patched from an earlier
    index (memory/index_patch.py): `assemble` turns either into the same MemoryIndex."""

    ids: list[str]
    conversation: Array
    conversation_ids: list[str]
    seq: Array
    role_code: Array
    roles: list[str]
    times: Array
    day: Array
    days: list[str]
    tokens: Array
    source: Array
    sources: list[str]
    head: Array
    group: dict[int, list[int]]
    names: Names
    speaker: Array
    asks: Array
    rank: Array  # each id's place in sorted order (_neighbours)


def columns_of(rows: Sequence[ContentRow]) -> Columns:
    """The columns of message rows (in index order)."""
    ids = [c.content_id for c in rows]
    conversation, conversation_ids = _codes([c.conversation_id for c in rows])
    day, days = _codes([c.day for c in rows])
    role_code, roles = _codes([c.role for c in rows])
    source, sources = _codes([c.source for c in rows])
    head, group = _merged_groups(rows, ids)
    names = speaker_names((c.role, c.author) for c in rows)
    return Columns(
        ids=ids,
        conversation=conversation,
        conversation_ids=conversation_ids,
        seq=np.array([c.seq for c in rows], dtype=np.int64),
        role_code=role_code,
        roles=roles,
        times=np.array([epoch(c.created_at) for c in rows], dtype=np.float64),
        day=day,
        days=days,
        tokens=np.array([c.tokens for c in rows], dtype=np.int64),
        source=source,
        sources=sources,
        head=head,
        group=group,
        names=names,
        speaker=speakers(rows, names),
        asks=asks_of(rows),
        rank=id_rank(ids),
    )


def speakers(rows: Sequence[ContentRow], names: Names) -> Array:
    """Per row: its speaker's position in `names.names`, -1 when unnamed."""
    speaker_of = {n: i for i, n in enumerate(names.names)}
    return np.array([speaker_of.get(c.author or "", -1) if c.role in NAMED_ROLES else -1 for c in rows], np.int64)


def asks_of(rows: Sequence[ContentRow]) -> Array:
    """Per row: it asks something (a '?' in its key text)."""
    return np.array(["?" in c.key_text or "？" in c.key_text for c in rows], dtype=bool)


def build_index(
    graph: MemoryGraph,
    run_id: str,
    dense: Array,
    *,
    texts: dict[str, str] | None = None,
    titles: dict[str, str | None] | None = None,
    key_roles: Sequence[str] = ("user", "other"),
    edges: Iterable[tuple[str, str, str, float]] | None = None,
    counts: TermCounts | None = None,
    cue_matrices: tuple[CSR, CSR] | None = None,
) -> MemoryIndex:
    """Arrays and matrices from a graph (pure: the benchmark builds generated graphs with it too).

    `dense` has one row per message content node, in `graph.content` order of the message rows. Session keys
    (memory/session.py) are read from the `key_roles` messages. `edges` (kind, src, dst, weight), when given,
    replaces `graph.edges` (read once: `load_index` streams them from staging.db). `counts`, when given, are the
    message rows' key text term counts, `cue_matrices` the cue -> content and cue -> conversation weights
    (memory/index_reuse.py takes most of both from an earlier index; `edges` is then not read).
    """
    rows = [c for c in graph.content if c.kind == "message"]
    columns = columns_of(rows)
    if cue_matrices is None:
        found = ((e.kind, e.src, e.dst, e.weight) for e in graph.edges) if edges is None else edges
        position = {c: i for i, c in enumerate(columns.ids)}
        cue_matrices = _cue_matrices(found, [c.cue_id for c in graph.cues], position, columns.conversation_ids)
    if counts is None:
        counts = TermCounts.of_texts(c.key_text for c in rows)
    return assemble(columns, graph.cues, run_id, dense, counts, cue_matrices, key_roles, texts=texts, titles=titles)


def assemble(
    columns: Columns,
    cues: Sequence[CueRow],
    run_id: str,
    dense: Array,
    counts: TermCounts,
    cue_matrices: tuple[CSR, CSR],
    key_roles: Sequence[str],
    *,
    texts: Mapping[str, str] | None = None,
    titles: Mapping[str, str | None] | None = None,
    session_vectors: Array | None = None,
    session_counts: TermCounts | None = None,
    coarse: tuple[Array, Array] | None = None,
) -> MemoryIndex:
    """The index of these columns, cues, key vectors, term counts and cue weights (and the conversations' key
    vectors and documents, memory.session.session_keys, when already known; the coarse pass's projection and
    projected vectors, when kept from an earlier index)."""
    cue_content, cue_conversation = cue_matrices
    prev, nxt = _neighbours(columns.conversation, columns.seq, columns.rank)
    keyed = np.isin(columns.role_code, [i for i, r in enumerate(columns.roles) if r in key_roles])
    index = MemoryIndex(
        run_id=run_id,
        ids=columns.ids,
        conversation_ids=columns.conversation_ids,
        conversation=columns.conversation,
        seq=columns.seq,
        roles=columns.roles,
        role_code=columns.role_code,
        times=columns.times,
        day=columns.day,
        tokens=columns.tokens,
        source=columns.source,
        sources=columns.sources,
        head=columns.head,
        group=columns.group,
        bm25=BM25.from_counts(counts.matrix, counts.names),
        dense=dense,
        cue_ids=[c.cue_id for c in cues],
        cue_names=[c.name for c in cues],
        cue_idf=np.array([c.idf for c in cues], dtype=np.float32),
        cue_hub=np.array([c.hub for c in cues], dtype=bool),
        cue_bm25=BM25.build([terms(c.name) for c in cues]),
        cue_content=cue_content,
        cue_conversation=cue_conversation,
        content_cue=cue_content.transpose(),
        conversation_code={c: i for i, c in enumerate(columns.conversation_ids)},
        prev=prev,
        next=nxt,
        titles=titles or {},
        texts=texts or {},
        position={c: i for i, c in enumerate(columns.ids)},
        names=columns.names,
        asks=columns.asks,
        speaker=columns.speaker,
        sessions=session_keys(
            counts, keyed, columns.conversation, len(columns.conversation_ids), dense, session_vectors, session_counts
        ),
        days=columns.days,
    )
    if coarse is not None:
        index.projection, index.coarse = coarse
    elif index.size >= COARSE_FROM:
        index.add_projection()
    return index


def embeds_role(settings: Settings, role: str) -> bool:
    """Whose messages get a key vector: everyone's with the cheap default embedder, the key roles' with the
    full model (where it matters, within its time budget)."""
    return settings.memory.key_embedder == "embed" or role in settings.memory.key_roles


def key_embedder(settings: Settings, *, quick_start: bool = False) -> Embedder:
    """The embedder of content keys and queries (memory.key_embedder, resolved: `auto` is a cues run's choice, see
    memory.key_model.for_run). `quick_start`: for a process that embeds one query (clients.embedders.OnnxMiniLM)."""
    if settings.memory.key_embedder == "auto":
        raise ValueError("memory.key_embedder = auto names no model: resolve it for a cues run (key_model.for_run)")
    if settings.memory.key_embedder == "minilm-onnx":
        return OnnxMiniLM(
            max_tokens=settings.memory.key_max_tokens, threads=settings.embed.threads, quick_start=quick_start
        )
    return build_embedder(settings.embed)


def run_embedder(
    settings: Settings, staging: sqlite3.Connection, run_id: str | None = None
) -> tuple[Settings, Embedder]:
    """The settings and key embedder a recall of a cues run (the latest by default) uses: `auto` resolved to the
    model the run embedded its keys with (the static one when there is no run yet)."""
    run_id = run_id or store.latest_run(staging)
    resolved = for_run(settings, staging, run_id) if run_id else settings
    if resolved.memory.key_embedder == "auto":
        resolved = with_model(resolved, STATIC)
    return resolved, key_embedder(resolved)


def load_index(
    archive: sqlite3.Connection,
    staging: sqlite3.Connection,
    settings: Settings,
    embedder: Embedder,
    *,
    run_id: str | None = None,
    reuse: Reuse | None = None,
    keep_texts: bool = True,
) -> MemoryIndex:
    """The latest (or the given) cues run of a data dir, with texts and key vectors; ConfigError when none.

    Key vectors (the masked text, memory.graph.dense_key) come from the cache the embed and cues stages filled,
    by text hash; anything missing is embedded here, in memory. `embedder` must be the run's key embedder
    (`key_embedder(for_run(...))`). With `reuse` (memory/index_reuse.py, an earlier run's stored index), the term
    counts and key vectors of the rows shared with that run are taken from it, and only the other rows' texts
    are read: `texts` then holds those only (memory/index_store.py reads the rest from archive.db when asked).
    `keep_texts=False` (memory/index_store.py, which reads texts from archive.db when shown): `texts` is empty and
    the texts the key vectors need are read VECTOR_CHUNK at a time, never all at once (1.1 KB a message, ~1 GB
    at 1M messages); the key vectors are the same.

    Every read is of one snapshot of each database (staging.db.read_snapshot): the run's rows, key texts, edges
    and facts are read in many statements, and a prune committed by another run between two of them (the rows of
    a run it no longer keeps) would make them disagree.
    """
    with read_snapshot(staging), read_snapshot(archive):
        return _load_index(archive, staging, settings, embedder, run_id, reuse, keep_texts)


def _load_index(
    archive: sqlite3.Connection,
    staging: sqlite3.Connection,
    settings: Settings,
    embedder: Embedder,
    run_id: str | None,
    reuse: Reuse | None,
    keep_texts: bool,
) -> MemoryIndex:
    """load_index's build, in the snapshot it holds."""
    run_id = run_id or store.latest_run(staging)
    if run_id is None:
        raise ChatmemError(
            "no memory yet: run the pipeline (chatmem run EXPORT), or finish a run that stopped early"
            " (chatmem run --run-id RUN --from segment; runs: chatmem staging runs)"
        )
    settings = for_run(settings, staging, run_id)
    check_embedder(settings, embedder)
    graph = store.read_run(staging, run_id, edges=False, key_texts=reuse is not None)
    rows = [c for c in graph.content if c.kind == "message"]
    cues = graph.cues
    del graph  # the rows (their key texts: ~1.9 KB a message) are dropped once their columns and counts are taken
    ids = [c.content_id for c in rows]
    dense = np.zeros((len(ids), embedder.dim), dtype=np.float32)
    have = np.zeros(len(ids), dtype=bool)
    wanted = np.array([embeds_role(settings, r.role) for r in rows], dtype=bool)
    names = speaker_names((r.role, r.author) for r in rows)
    counts = None
    if reuse is not None:
        old = reuse.positions(ids)
        counts = reuse.counts(old, [None if o >= 0 else r.key_text for o, r in zip(old, rows, strict=True)])
        if list(reuse.previous.names.names) == list(names.names):  # the same masking: the same key vectors
            earlier = reuse.previous.dense
            if hasattr(earlier, "entries"):  # stored segments (memory/mapped.py Rows): hashed before they are copied
                from memory import vector_segments

                vector_segments.verify(earlier.segments, earlier.entries)
            shared = np.flatnonzero((old >= 0) & wanted)
            dense[shared] = reuse.previous.dense[old[shared]]
            have[shared] = True
    # what build_index takes from the rows, taken before the key vectors fill `dense`
    columns = columns_of(rows)
    if counts is None:  # a fresh build: the key texts read one at a time (not held by the rows), counted
        asks: list[bool] = []
        counts = TermCounts.of_texts(_key_texts(staging, run_id, ids, asks))
        columns.asks = np.array(asks, dtype=bool)  # asks_of(rows) on the texts read here
    del rows
    texts: Mapping[str, str] = {}
    if keep_texts:  # every text (a fresh build), or those of the rows without a vector yet (a reuse)
        texts = inputs.message_texts(
            archive, ids if reuse is None else [ids[i] for i in np.flatnonzero(wanted & ~have)]
        )
        fill_vectors(staging, settings, embedder, dense, have, wanted, ids, texts, names)
    else:
        fill_vectors(
            staging, settings, embedder, dense, have, wanted, ids, partial(inputs.message_texts, archive), names
        )
    del have, wanted
    titles = inputs.conversation_titles(archive)
    cue_ids = [c.cue_id for c in cues]
    position = {c: i for i, c in enumerate(ids)}
    if reuse is not None:  # the earlier index's cue weights, less the edges retired since, plus those written
        matrices = reuse.cue_matrices(staging, run_id, cue_ids, position, columns.conversation_ids)
    else:
        edges = (
            (kind, src, dst, weight)
            for kind in ("cue-content", "cue-tag")
            for src, dst, weight in store.iter_edges(staging, run_id, kind)
        )
        matrices = _cue_matrices(edges, cue_ids, position, columns.conversation_ids)
    del position
    index = assemble(
        columns, cues, run_id, dense, counts, matrices, settings.memory.key_roles, texts=texts, titles=titles
    )
    return attach_facts(index, staging)


def _key_texts(staging: sqlite3.Connection, run_id: str, ids: Sequence[str], asks: list[bool]) -> Iterator[str]:
    """The key texts of the message rows `ids` (read_run's order), one at a time; each one's `asks_of` appended
    to `asks` as it is read."""
    read = 0
    for content_id, key_text in store.iter_key_texts(staging, run_id):
        if read >= len(ids) or content_id != ids[read]:
            raise ValueError(f"run {run_id}: the key texts read do not follow its content rows ({content_id})")
        read += 1
        asks.append("?" in key_text or "？" in key_text)
        yield key_text
    if read != len(ids):
        raise ValueError(f"run {run_id}: {len(ids) - read} content rows without a key text read")


def fill_vectors(
    staging: sqlite3.Connection,
    settings: Settings,
    embedder: Embedder,
    dense: Array,
    have: Array,
    wanted: Array,
    ids: Sequence[str],
    texts: Mapping[str, str] | Callable[[list[str]], Mapping[str, str]],
    names: Names,
) -> None:
    """The key vectors of the `wanted` rows not yet `have`: from the vector cache by their masked text's hash,
    embedded here (in memory) where the stages did not cover them (no segment, another model). `texts`: the
    messages' texts by id, or a reader of the texts of some ids (inputs.message_texts on archive.db), then called
    once per VECTOR_CHUNK rows so that no more than a chunk's texts are held at a time (the same vectors)."""
    from clients.embed_cache import embed_texts  # building: the pipeline's modules are fine here
    from memory.graph import dense_key

    def keys_of(chunk: list[int]) -> list[str]:
        found = texts if isinstance(texts, Mapping) else texts([ids[i] for i in chunk])
        return [dense_key(found.get(ids[i], ""), names) for i in chunk]

    keyed_rows = [int(i) for i in np.flatnonzero(wanted & ~have)]
    for start in range(0, len(keyed_rows), VECTOR_CHUNK):  # a chunk at a time: no second copy of every vector
        chunk = keyed_rows[start : start + VECTOR_CHUNK]
        hashes = [vectors.text_hash(key) for key in keys_of(chunk)]
        cached = vectors.load_vectors(staging, embedder.key, hashes)
        for i, h in zip(chunk, hashes, strict=True):
            if h in cached:
                dense[i] = cached[h]
                have[i] = True
        del hashes, cached
    missing = [int(i) for i in np.flatnonzero(wanted & ~have)]
    if missing:  # few (the stages cached the rest): embedded in one call, as their texts were before
        keyed = [
            key
            for start in range(0, len(missing), VECTOR_CHUNK)
            for key in keys_of(missing[start : start + VECTOR_CHUNK])
        ]
        dense[missing] = embed_texts(embedder, keyed, embedder.batch_size or settings.embed.batch_size)


def check_embedder(settings: Settings, embedder: Embedder) -> None:
    """Queries and keys from one model: an index built with another run's (or setting's) embedder is a bug."""
    wanted = key_embedder(settings).key
    if embedder.key != wanted:
        raise ValueError(f"keys of this memory are {wanted} vectors; the embedder given is {embedder.key}")


def attach_facts(index: MemoryIndex, staging: sqlite3.Connection) -> MemoryIndex:
    """The garden's facts (superseded ones included) and where their messages sit: recall's fact boost."""
    from staging.fact_timeline import fact_rows  # plain records: a recall imports no pydantic

    index.facts = [r for r in fact_rows(staging) if r.state != "retracted"]
    wanted = {m for r in index.facts for m in r.message_ids}
    index.fact_positions = {m: index.position[m] for m in sorted(wanted) if m in index.position}
    return index
