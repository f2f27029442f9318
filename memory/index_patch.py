"""The recall index of an incremental cues run, patched from the stored index of an earlier run: the work is what
changed, not the memory.

A cues run R after run E (the run of the stored index) rebuilds a few conversations; every other conversation's
content rows are E's, shared (staging/memory_history.py). The rows that differ are found by the history columns:
those written after E and live at R, and those live at E that R no longer has (retired after E). Their
conversations are the *touched* ones. Merged groups, NEXT/PREV neighbours and speakers never reach across
conversations (memory/consolidate.py merges within one conversation), so an untouched conversation's content reads
as in E's index, at new positions:

    per content       E's arrays for the untouched conversations (codes renumbered where a conversation, day,
                      role or source came or went), the touched conversations' rows read from staging.db (by
                      conversation: memory_content_by_conversation), merged in id order
    neighbours        one numpy sort of (conversation, seq, id) over every content (memory.index._neighbours)
    term counts       E's for every row created at or before E (memory/index_reuse.py Reuse.counts), the rest
                      counted from their key texts
    key vectors       E's for those rows, read where E's segments hold them (memory/vector_segments.py: nothing
                      copied); the others from the vector cache (their texts read from archive.db), a new segment
    pre-pass lists    E's k-means lists and coarse projection kept: each new row joins its nearest list (a build
                      from scratch trains them again, so a patched index's lists are those of the build it came from)
    cue weights       E's entries, less those of the touched conversations and of the edges retired after E, plus
                      the live edges into the touched conversations (by dst: memory_edges_by_dst) and the live
                      edges that replaced a retired one (by key)
    the rest          computed over the whole memory as a fresh build does (memory.index.assemble): BM25 and its
                      statistics, session keys, cues

The result is the index a build from scratch gives, array for array but for the pre-pass lists and the coarse
projection (tests/test_index_patch.py, over several incremental runs; past vector_segments' limits the vectors are
written again and the lists trained again, and then every array is a fresh build's). Where that cannot be shown
cheaply the patch declines (returns None) and the caller builds as before: a speaker name came or went (every key
vector's masking changes), a cue of an untouched entry is gone.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from bisect import bisect_left
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from memory import vector_segments
from memory.dense_lists import ConversationMembers, DenseLists, PrepassTables
from memory.index import (
    COARSE_FROM,
    Columns,
    MemoryIndex,
    _merged_groups,
    asks_of,
    assemble,
    embeds_role,
    epoch,
    fill_vectors,
    speakers,
)
from memory.index_reuse import Reuse, merged_counts, strings
from memory.mapped import Rows
from memory.names import NAMED_ROLES
from memory.session import conversation_counts, session_vectors
from memory.sparse import CSR
from memory.text import TermCounts
from staging import memory as store
from staging import memory_inputs as inputs
from staging.db import IN_VALUES, json_values
from staging.memory import ContentRow
from staging.memory_history import LIVE

if TYPE_CHECKING:
    from clients.embedders import Embedder
    from contracts.settings import Settings

log = logging.getLogger(__name__)
Array = np.ndarray[Any, Any]
CONTENT = "content_id, kind, conversation_id, seq, role, author, created_at, day, source, key_text, tokens, merged_into"
PATCH_SHARE = 0.5  # the share of the earlier index's content a patch may read again (more: a build is as quick)


def _declined(reason: str) -> MemoryIndex | None:
    log.info("recall index: not patched from the earlier index (%s): built from its rows", reason)
    return None


def touched(staging: sqlite3.Connection, earlier: str, run_id: str) -> list[str]:
    """The conversations whose content rows differ between run `earlier` and run `run_id` (sorted)."""
    # every row written after `earlier`, live at `run_id` or not (one retired since was written in a conversation
    # that changed, or that no longer has content): read from memory_content_by_conversation alone, which holds
    # the primary key (content_id, run_id) beside the conversation (a covering scan, not one of the table)
    written = staging.execute(
        "SELECT DISTINCT conversation_id FROM memory_content WHERE run_id > ? AND run_id <= ?", (earlier, run_id)
    )
    retired = staging.execute(
        "SELECT DISTINCT conversation_id FROM memory_content"
        " WHERE retired_run_id > ? AND retired_run_id <= ? AND run_id <= ?",
        (earlier, run_id, earlier),
    )
    return sorted({str(r[0]) for r in written} | {str(r[0]) for r in retired})


def _content_rows(staging: sqlite3.Connection, run_id: str, conversations: list[str]) -> list[tuple[ContentRow, str]]:
    """The message rows of these conversations live at `run_id`, in id order, with the run that wrote each."""
    found = staging.execute(
        f"SELECT {CONTENT}, run_id FROM memory_content WHERE conversation_id IN {IN_VALUES} AND {LIVE}"
        " AND kind = 'message' ORDER BY content_id",
        (json_values(conversations), run_id, run_id),
    )
    return [(ContentRow(*r[:-1]), str(r[-1])) for r in found]


def _renumbered(
    old_names: Sequence[str], old_codes: Array, new_values: Sequence[str | None]
) -> tuple[Array, Array, list[str]]:
    """(old code -> new code map, the new rows' codes, names) for a coded column: the names still used by the kept
    codes and the new rows' values, sorted, as memory.index._codes numbers them."""
    used = np.unique(old_codes[old_codes >= 0])
    names = sorted({old_names[int(c)] for c in used} | {v for v in new_values if v is not None})
    lookup = {v: i for i, v in enumerate(names)}
    remap = np.full(len(old_names) + 1, -1, dtype=np.int64)  # the last slot: -1 (unknown) stays -1
    for c in used.tolist():
        remap[c] = lookup[old_names[c]]
    fresh = np.array([lookup[v] if v is not None else -1 for v in new_values], dtype=np.int64)
    return remap, fresh, names


def patch_index(
    archive: sqlite3.Connection,
    staging: sqlite3.Connection,
    settings: Settings,
    embedder: Embedder,
    run_id: str,
    previous: MemoryIndex,
) -> MemoryIndex | None:
    """The index of run `run_id` from `previous` (an earlier run's stored index, checked by the caller: same key
    model and roles, its run unchanged in staging.db) and the rows that changed since; None when it declines."""
    earlier = previous.run_id
    if earlier >= run_id or previous.bm25.tf is None or previous.asks is None or previous.speaker is None:
        return _declined("the earlier index is of a later run, or lacks term counts")
    conversations = touched(staging, earlier, run_id)
    old_conversation_ids = strings(previous.conversation_ids)
    old_code = {c: i for i, c in enumerate(old_conversation_ids)}
    gone_codes = np.array([old_code[c] for c in conversations if c in old_code], dtype=np.int64)
    old_conversation = np.asarray(previous.conversation)
    kept_old = np.flatnonzero(~np.isin(old_conversation, gone_codes))  # E's content of untouched conversations
    found = _content_rows(staging, run_id, conversations)
    if len(found) > previous.size * PATCH_SHARE:  # most of the memory changed (a full build since): build it whole
        return _declined(f"{len(found)} of {previous.size} rows changed")
    rows = [r for r, _ in found]
    written_by = [w for _, w in found]

    # names: the speakers of the kept rows (those E's index names) and of the new rows; declined unless the same
    old_names = list(previous.names.names)
    old_speaker = np.asarray(previous.speaker)
    confirmed = {old_names[int(s)] for s in np.unique(old_speaker[kept_old]) if s >= 0}
    authors = {r.author.strip() for r in rows if r.role in NAMED_ROLES and r.author and r.author.strip()}
    if confirmed | authors != set(old_names):
        return _declined("a speaker name came or went")

    # positions: the kept ids and the new rows' ids, both sorted, merged
    all_old_ids = strings(previous.ids)
    kept_ids = [all_old_ids[i] for i in kept_old.tolist()]
    new_ids = [r.content_id for r in rows]
    insert = np.array([bisect_left(kept_ids, c) for c in new_ids], dtype=np.int64)
    new_at = insert + np.arange(len(new_ids), dtype=np.int64)
    kept_at = np.arange(len(kept_ids), dtype=np.int64) + np.searchsorted(insert, np.arange(len(kept_ids)), "right")
    n = len(kept_ids) + len(new_ids)
    ids: list[str] = [""] * n
    for i, c in zip(kept_at.tolist(), kept_ids, strict=True):
        ids[i] = c
    for i, c in zip(new_at.tolist(), new_ids, strict=True):
        ids[i] = c
    old_to_new = np.full(previous.size, -1, dtype=np.int64)
    old_to_new[kept_old] = kept_at

    def placed(old: Array, new: Array, dtype: Any) -> Array:
        out = np.empty(n, dtype=dtype)
        out[kept_at] = np.asarray(old)[kept_old]
        out[new_at] = new
        return out

    remaps: list[Array] = []

    def coded(old_names: Sequence[str], old: Array, values: Sequence[str | None]) -> tuple[Array, list[str]]:
        old_kept = np.asarray(old)[kept_old]
        remap, fresh, names = _renumbered(old_names, old_kept, values)
        remaps.append(remap)
        return placed(remap[old], fresh, np.int64), names

    conversation, conversation_ids = coded(old_conversation_ids, old_conversation, [r.conversation_id for r in rows])
    conversation_remap = remaps[0][: len(old_conversation_ids)]
    day, days = coded(list(previous.days), np.asarray(previous.day), [r.day for r in rows])
    role_code, roles = coded(list(previous.roles), np.asarray(previous.role_code), [r.role for r in rows])
    source, sources = coded(list(previous.sources), np.asarray(previous.source), [r.source for r in rows])

    # merged groups: E's of the kept conversations, moved; the new rows' own (a group never spans conversations)
    old_head = np.asarray(previous.head)
    head = placed(old_to_new[old_head], np.zeros(len(rows), dtype=np.int64), np.int64)
    group: dict[int, list[int]] = {}
    for h, members in previous.group.items():
        if old_to_new[h] >= 0:
            group[int(old_to_new[h])] = old_to_new[np.asarray(members, dtype=np.int64)].tolist()
    local_head, local_group = _merged_groups(rows, new_ids)
    head[new_at] = new_at[local_head]
    for h, members in local_group.items():
        group[int(new_at[h])] = new_at[np.asarray(members, dtype=np.int64)].tolist()

    columns = Columns(
        ids=ids,
        conversation=conversation,
        conversation_ids=conversation_ids,
        seq=placed(previous.seq, np.array([r.seq for r in rows], dtype=np.int64), np.int64),
        role_code=role_code,
        roles=roles,
        times=placed(previous.times, np.array([epoch(r.created_at) for r in rows], dtype=np.float64), np.float64),
        day=day,
        days=days,
        tokens=placed(previous.tokens, np.array([r.tokens for r in rows], dtype=np.int64), np.int64),
        source=source,
        sources=sources,
        head=head,
        group=group,
        names=previous.names,
        speaker=placed(old_speaker, speakers(rows, previous.names), np.int64),
        asks=placed(previous.asks, asks_of(rows), bool),
        rank=np.arange(n, dtype=np.int64),
    )

    # term counts and key vectors: E's for every row it holds (kept, or a touched conversation's row written by
    # E or before: rows are retired, never changed), the rest counted and looked up
    old = np.full(n, -1, dtype=np.int64)
    old[kept_at] = kept_old
    lookup = previous.position
    for i, row, by in zip(new_at.tolist(), rows, written_by, strict=True):
        if by <= earlier:
            old[i] = lookup.get(row.content_id, -1)
    key_texts: list[str | None] = [None] * n
    for i, row in zip(new_at.tolist(), rows, strict=True):
        if old[i] < 0:
            key_texts[i] = row.key_text
    counts = Reuse(previous).counts(old, key_texts)
    wanted = placed(
        np.isin(np.asarray(previous.role_code), [i for i, r in enumerate(previous.roles) if embeds_role(settings, r)]),
        np.array([embeds_role(settings, r.role) for r in rows], dtype=bool),
        bool,
    )
    fresh = np.flatnonzero(old < 0)  # rows E does not hold: their vectors from the cache (or embedded)
    fresh_vectors = np.zeros((len(fresh), embedder.dim), dtype=np.float32)
    fresh_ids = [ids[i] for i in fresh.tolist()]
    texts = inputs.message_texts(archive, [ids[i] for i in fresh[wanted[fresh]].tolist()])
    fill_vectors(
        staging,
        settings,
        embedder,
        fresh_vectors,
        np.zeros(len(fresh), bool),
        wanted[fresh],
        fresh_ids,
        texts,
        previous.names,
    )
    dense, lists = _key_vectors(previous, old, fresh, fresh_vectors, wanted, n >= settings.recall.prepass_from)

    vectors = _session_vectors(previous, settings.memory.key_roles, columns, conversation_remap, new_at, dense)

    cues = store.read_cues(staging, run_id)
    cue_ids = [c.cue_id for c in cues]
    try:
        matrices = _cue_matrices(
            staging, previous, run_id, cue_ids, (old_to_new, n), new_ids, new_at, conversations, conversation_ids
        )
    except ValueError as error:
        return _declined(str(error))
    key_roles = settings.memory.key_roles
    summed = _session_counts(previous, key_roles, columns, conversation_remap, new_at, counts)
    coarse = None
    if lists is not None and previous.projection is not None and previous.coarse is not None and n >= COARSE_FROM:
        coarse = np.empty((n, previous.projection.shape[1]), dtype=np.float32)  # E's projection, E's rows moved
        held = np.flatnonzero(old >= 0)
        coarse[held] = np.asarray(previous.coarse)[old[held]]
        coarse[fresh] = fresh_vectors @ previous.projection
    patched = assemble(
        columns,
        cues,
        run_id,
        dense,
        counts,
        matrices,
        key_roles,
        texts=texts,
        session_vectors=vectors,
        session_counts=summed,
        coarse=None if coarse is None else (np.asarray(previous.projection), coarse),
    )
    if lists is not None:
        patched.prepass = PrepassTables(ConversationMembers.build(patched.conversation, len(conversation_ids)), lists)
    return patched


def _key_vectors(
    previous: MemoryIndex, old: Array, fresh: Array, fresh_vectors: Array, wanted: Array, share: bool
) -> tuple[Array, DenseLists | None]:
    """(the key vectors, the pre-pass lists when they are E's kept): E's vector segments read where they are and a
    segment of the `fresh` rows, with E's k-means lists (each new row joins its nearest list), when E's index holds
    its vectors in segments and sharing them is still worth it (memory/vector_segments.py); else one array, as a
    build from scratch holds them (its lists trained again)."""
    n, held = len(old), np.flatnonzero(old >= 0)
    earlier = previous.dense
    earlier_lists = previous.prepass.lists if previous.prepass is not None else None
    if share and isinstance(earlier, Rows) and earlier_lists is not None:
        where = np.empty(n, dtype=np.int64)
        where[held] = earlier.where[old[held]]
        where[fresh] = sum(len(s) for s in earlier.segments) + np.arange(len(fresh))
        segments = [*earlier.segments, fresh_vectors] if len(fresh) else list(earlier.segments)
        entries = [*earlier.entries, None] if len(fresh) else list(earlier.entries)
        if vector_segments.worth_sharing(segments, where):
            assign = np.empty(n, dtype=np.int64)
            assign[held] = earlier_lists.assignment()[old[held]]
            assign[fresh] = earlier_lists.nearest(fresh_vectors)
            return Rows(segments, where, entries), earlier_lists.reassigned(assign)
    if isinstance(earlier, Rows):  # copied into a new segment: no changed byte written again under a new checksum
        vector_segments.verify(earlier.segments, earlier.entries)
    dense = np.zeros((n, fresh_vectors.shape[1]), dtype=np.float32)
    shared = held[wanted[held]]  # an unwanted row's vector is zero (E's is too: the same key roles and model)
    dense[shared] = earlier[old[shared]]
    dense[fresh] = fresh_vectors
    return dense, None


def _session_counts(
    previous: MemoryIndex, key_roles: Sequence[str], columns: Columns, remap: Array, new_at: Array, counts: TermCounts
) -> TermCounts | None:
    """The conversations' documents (memory.session.conversation_counts): E's for the untouched conversations
    (its session BM25's raw counts), the touched ones summed from their messages' counts."""
    earlier = previous.sessions.bm25 if previous.sessions is not None else None
    if earlier is None or earlier.tf is None or earlier.postings.shape[1] != len(remap):
        return None
    keyed = np.isin(columns.role_code, [i for i, r in enumerate(columns.roles) if r in key_roles])
    rows = new_at[keyed[new_at]]
    codes = np.unique(columns.conversation[new_at])
    part = conversation_counts(
        TermCounts(counts.matrix[rows], counts.names),
        np.ones(len(rows), dtype=bool),
        np.searchsorted(codes, columns.conversation[rows]),
        len(codes),
    )
    return merged_counts(earlier, remap, len(columns.conversation_ids), codes, part)


def _session_vectors(
    previous: MemoryIndex, key_roles: Sequence[str], columns: Columns, remap: Array, new_at: Array, dense: Array
) -> Array | None:
    """The conversations' key vectors (memory.session.session_vectors): E's rows for the untouched conversations
    (the same messages, vectors and order: the same sums), the touched ones summed from their messages."""
    if previous.sessions is None or np.asarray(previous.sessions.dense).shape != (len(remap), dense.shape[1]):
        return None
    vectors = np.zeros((len(columns.conversation_ids), dense.shape[1]), dtype=np.float32)
    untouched = np.flatnonzero(remap >= 0)
    vectors[remap[untouched]] = np.asarray(previous.sessions.dense)[untouched]
    keyed = np.isin(columns.role_code, [i for i, r in enumerate(columns.roles) if r in key_roles])
    rows = new_at[keyed[new_at] & (columns.conversation[new_at] >= 0)]  # ascending: the order of a full sum
    codes = np.unique(columns.conversation[new_at])  # the touched conversations (never -1: a row has one)
    local = np.searchsorted(codes, columns.conversation[rows])
    part = session_vectors(np.ones(len(rows), dtype=bool), local, len(codes), dense[rows])
    vectors[codes] = part
    return vectors


def _cue_matrices(
    staging: sqlite3.Connection,
    previous: MemoryIndex,
    run_id: str,
    cue_ids: list[str],
    content_map: tuple[Array, int],
    new_ids: list[str],
    new_at: Array,
    conversations: list[str],
    conversation_ids: list[str],
) -> tuple[CSR, CSR]:
    """(cues x content, cues x conversations): E's entries of the untouched conversations whose edge is still the
    same row, moved; the live edges into the touched conversations and those that replaced a retired edge."""
    earlier = previous.run_id
    old_to_new, size = content_map
    retired = staging.execute(
        "SELECT src, dst, kind FROM memory_edges WHERE retired_run_id > ? AND retired_run_id <= ? AND run_id <= ?"
        " AND kind IN ('cue-content', 'cue-tag')",
        (earlier, run_id, earlier),
    ).fetchall()
    cue_at = {c: i for i, c in enumerate(cue_ids)}
    new_content = dict(zip(new_ids, new_at.tolist(), strict=True))
    conversation_at = {f"conv:{c}": i for i, c in enumerate(conversation_ids)}
    touched_tags = [f"conv:{c}" for c in conversations]
    into = staging.execute(
        f"SELECT src, dst, kind, weight FROM memory_edges WHERE dst IN {IN_VALUES} AND {LIVE}"
        " AND kind IN ('cue-content', 'cue-tag')",
        (json_values([*new_ids, *touched_tags]), run_id, run_id),
    ).fetchall()
    replaced = staging.execute(
        "SELECT e.src, e.dst, e.kind, e.weight FROM json_each(?) AS j JOIN memory_edges AS e"
        " ON e.src = json_extract(j.value, '$[0]') AND e.dst = json_extract(j.value, '$[1]')"
        " WHERE e.run_id <= ? AND (e.retired_run_id IS NULL OR e.retired_run_id > ?)",
        (json.dumps(sorted({(s, d) for s, d, _ in retired})), run_id, run_id),
    ).fetchall()
    touched_set = set(touched_tags)
    old_cue = {c: i for i, c in enumerate(strings(previous.cue_ids))}
    old_conversations = strings(previous.conversation_ids)
    old_conversation_at = {f"conv:{c}": i for i, c in enumerate(old_conversations)}
    cue_map = np.array([cue_at.get(c, -1) for c in strings(previous.cue_ids)], dtype=np.int64)
    conversation_map = np.array(  # the touched conversations' entries are read again: not moved
        [-1 if f"conv:{c}" in touched_set else conversation_at.get(f"conv:{c}", -1) for c in old_conversations],
        dtype=np.int64,
    )
    old_ids = strings(previous.ids)  # sorted: a position is a bisect, not a binary search over the stored column

    def old_position(dst: str) -> int:
        at = bisect_left(old_ids, dst)
        return at if at < len(old_ids) and old_ids[at] == dst else -1

    def content_column(dst: str) -> int:
        if dst in new_content:
            return int(new_content[dst])
        old = old_position(dst)
        return int(old_to_new[old]) if old >= 0 else -1

    def old_content_column(dst: str) -> int:
        return old_position(dst)

    def old_tag_column(dst: str) -> int:
        return old_conversation_at.get(dst, -1)

    def tag_column(dst: str) -> int:
        return conversation_at.get(dst, -1)

    shapes = {"cue-content": (len(cue_ids), size), "cue-tag": (len(cue_ids), len(conversation_ids))}
    matrices = []
    for kind, matrix, column_map, old_column, new_column, fresh in (
        ("cue-content", previous.cue_content, old_to_new, old_content_column, content_column, new_content.keys()),
        ("cue-tag", previous.cue_conversation, conversation_map, old_tag_column, tag_column, touched_set),
    ):
        width = matrix.shape[1]
        removed = [
            old_cue[src] * width + old_column(dst)
            for src, dst, k in retired
            if k == kind and src in old_cue and old_column(dst) >= 0
        ]
        added = [(cue_at[src], new_column(dst), weight) for src, dst, k, weight in into if k == kind and dst in fresh]
        added += [
            (cue_at[src], new_column(dst), weight)
            for src, dst, k, weight in replaced
            if k == kind and dst not in fresh and new_column(dst) >= 0
        ]
        removed_keys = np.array(removed, dtype=np.int64)
        matrices.append(_moved(matrix, cue_map, column_map, removed_keys, added, shapes[kind]))
    return matrices[0], matrices[1]


def _moved(
    matrix: CSR,
    row_map: Array,
    column_map: Array,
    removed: Array,
    added: list[tuple[int, int, float]],
    shape: tuple[int, int],
) -> CSR:
    """E's entries whose column is kept (`column_map` >= 0) and whose flat (row * width + column) key is not
    `removed`, at their new positions, with the `added` (row, column, weight) entries: canonical CSR."""
    from scipy.sparse import csr_matrix  # build time only

    width = matrix.shape[1]
    counts = np.diff(np.asarray(matrix.indptr))
    old_rows = np.repeat(np.arange(matrix.shape[0], dtype=np.int64), counts)
    old_columns = np.asarray(matrix.indices, dtype=np.int64)
    keep = column_map[old_columns] >= 0
    if len(removed):
        keep &= ~np.isin(old_rows * width + old_columns, removed)
    new_rows, new_columns = row_map[old_rows[keep]], column_map[old_columns[keep]]
    if (new_rows < 0).any():  # a kept entry whose cue is gone: its edge was not retired (not E's rows after all)
        raise ValueError("an edge of the earlier index names a cue the new run does not have")
    extra = np.array(added, dtype=np.float64).reshape(-1, 3)
    built = csr_matrix(
        (
            np.concatenate([np.asarray(matrix.data, dtype=np.float64)[keep], extra[:, 2]]),
            (
                np.concatenate([new_rows, extra[:, 0].astype(np.int64)]),
                np.concatenate([new_columns, extra[:, 1].astype(np.int64)]),
            ),
        ),
        shape=shape,
        dtype=np.float32,
    )
    built.sum_duplicates()
    return CSR.of(built)
