"""What the tables of the later stages mean: facts and the gardener's log (garden), the Cue-Tag-Content graph
(cues). Part of staging.db's map (staging/table_docs.py merges it with staging/table_docs_staging.py)."""

from __future__ import annotations

from staging.table_docs import RUN_ID, TableDoc, doc

# The memory tables' rows are shared across runs (staging/memory_history.py): the memory of run R is the rows
# with run_id <= R and no retired_run_id at or before R.
MEMORY_RUN = "The run that created the row; it belongs to every later run's memory until retired_run_id."
RETIRED = "The run that retired (replaced or dropped) the row; empty while it is current."

MEMORY: dict[str, TableDoc] = {
    "fact_mentions": doc(
        "Fact mentions",
        "Every checked fact one extraction read from its segment (subject, attribute, value), with its evidence.",
        {
            "cache_key": "The extraction (extractions.cache_key).",
            "ordinal": "Mention number within it.",
            "segment_id": "The segment.",
            "message_id": "The message that states it (archive messages.uuid).",
            "subject": "Who or what the fact is about.",
            "attribute": "Which property.",
            "value": "The value stated.",
            "polarity": "positive, or negative (the message says it is not so).",
            "text": "The verbatim span.",
            "confidence": "0..1.",
            "run_id": RUN_ID,
        },
    ),
    "facts": doc(
        "Facts",
        "One row per interval of validity, bi-temporal: valid_from/valid_to in event time, recorded_at/invalidated_at"
        " in ingestion time. Never deleted: superseded and retracted facts stay queryable as of a date.",
        {
            "fact_id": "Stable fact id.",
            "subject": "Who or what the fact is about.",
            "attribute": "Which property.",
            "value": "The value.",
            "value_key": "The folded value (compares values).",
            "polarity": "positive or negative.",
            "valid_from": "When it became true (event time).",
            "valid_to": "When it stopped being true (NULL: still true).",
            "recorded_at": "When chatmem learnt it (ingestion time).",
            "invalidated_at": "When chatmem stopped believing it (ingestion time).",
            "state": "valid, superseded (a newer fact contradicts it) or retracted (its evidence is gone).",
            "superseded_by": "The fact that replaced it.",
            "support": "How many mentions state it.",
            "last_stated": "Time of the latest mention.",
            "message_ids": "The messages that state it.",
            "evidence": "The mentions' spans.",
            "subject_concept_id": "The concept the subject resolved to.",
            "value_concept_id": "The concept the value resolved to.",
            "run_id": RUN_ID,
        },
        json="message_ids evidence",
        times="valid_from valid_to recorded_at invalidated_at last_stated",
    ),
    "garden_changes": doc(
        "Garden changes",
        "Every change the garden stage made (or, in a dry run, would make), and why.",
        {
            "run_id": RUN_ID,
            "ordinal": "Change number in the run.",
            "kind": "What kind of change (a fact superseded, a concept archived, ...).",
            "target": "The fact or concept changed.",
            "reason": "Why.",
            "before": "The value before.",
            "after": "The value after.",
            "dry_run": "1: planned only (a dry run), not applied.",
        },
        flags="dry_run",
    ),
    "memory_runs": doc(
        "Memory runs",
        "What the cues stage built for a run: counts of the Cue-Tag-Content graph and its hub report.",
        {
            "run_id": RUN_ID,
            "content": "Content nodes (messages and merged groups).",
            "cues": "Cue nodes.",
            "tags": "Tag nodes.",
            "edges": "Weighted edges.",
            "hubs": "Cues down-weighted as hubs.",
            "merged": "Near-identical messages merged into one content node.",
            "summary": "The hub report and notes.",
        },
        json="summary",
    ),
    "memory_content": doc(
        "Memory content",
        "Content nodes: a message, or a merged group of near-identical messages, with the key text recall matches.",
        {
            "run_id": MEMORY_RUN,
            "retired_run_id": RETIRED,
            "content_id": "A message uuid, or merged:<hash>.",
            "kind": "message or merged.",
            "conversation_id": "Its conversation.",
            "seq": "Its position in the conversation.",
            "role": "Who wrote it.",
            "author": "Author name, when known.",
            "created_at": "When (UTC).",
            "day": "The day (for day tags).",
            "source": "Export format it came from.",
            "key_text": "What recall matches: the text expanded with its cue names.",
            "tokens": "Estimated tokens.",
            "merged_into": "The merged node that stands for it.",
        },
        times="created_at",
    ),
    "memory_cues": doc(
        "Memory cues",
        "Cue nodes (anchors): concepts (by their cased titles) and WordNet categories of their head nouns, with "
        "document frequency and the hub flag.",
        {
            "run_id": MEMORY_RUN,
            "retired_run_id": RETIRED,
            "cue_id": "Cue id.",
            "name": "Its name.",
            "kind": "concept, or keyphrase: a WordNet category (cue id wn:<synset offset>, named by its lemmas).",
            "concept_type": "The concept's type.",
            "df": "Content nodes it points to.",
            "idf": "Inverse document frequency.",
            "hub": "1 when down-weighted as a hub.",
        },
        flags="hub",
    ),
    "memory_tags": doc(
        "Memory tags",
        "Tag nodes (groupings): conversation, day, month, topic, role, concept type, source.",
        {
            "run_id": MEMORY_RUN,
            "retired_run_id": RETIRED,
            "tag_id": "Tag id.",
            "kind": "What it groups by.",
            "label": "Its label.",
            "size": "Members.",
        },
    ),
    "memory_edges": doc(
        "Memory edges",
        "Weighted associations: cue-content, cue-tag, tag-content, traversed both ways by recall.",
        {
            "run_id": MEMORY_RUN,
            "retired_run_id": RETIRED,
            "src": "From node.",
            "dst": "To node.",
            "kind": "Edge kind.",
            "weight": "Weight.",
        },
    ),
    "memory_merges": doc(
        "Memory merges",
        "Which original messages each merged content node stands for: consolidation keeps every original.",
        {
            "run_id": MEMORY_RUN,
            "retired_run_id": RETIRED,
            "merged_id": "The merged node.",
            "original_id": "An original message.",
        },
    ),
}
