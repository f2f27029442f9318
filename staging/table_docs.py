"""What every table and column of archive.db and staging.db means: titles, descriptions and column kinds.

One map beside the schema modules, read by Datasette's metadata (`chatmem inspect`), by the polars frames
(`staging.frames`: which TEXT columns hold JSON, times or 0/1 flags) and by `chatmem staging export`.
tests/test_table_docs.py creates every schema the staging package knows and fails when a table or a column
has no entry here (or an entry names a column that no longer exists), so the map cannot drift from the code.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class TableDoc:
    """A table's title and description, a description per column, and the columns that need decoding."""

    title: str
    description: str
    columns: dict[str, str]
    json: frozenset[str] = field(default_factory=frozenset)  # TEXT holding JSON: decoded in frames
    times: frozenset[str] = field(default_factory=frozenset)  # ISO-8601 text: datetimes in frames
    flags: frozenset[str] = field(default_factory=frozenset)  # 0/1 integers: booleans in frames
    label_column: str | None = None  # what Datasette shows for a row in links to it


def _doc(
    title: str,
    description: str,
    columns: dict[str, str],
    *,
    json: str = "",
    times: str = "",
    flags: str = "",
    label: str | None = None,
) -> TableDoc:
    return TableDoc(
        title, description, columns, frozenset(json.split()), frozenset(times.split()), frozenset(flags.split()), label
    )


RUN_ID = "The run that wrote this row (runs.id)."

SCHEMA_MIGRATIONS = _doc(
    "Schema migrations",
    "Which schema versions this file has been through, when, and by which chatmem (staging/migrations.py).",
    {
        "version": "Schema version the migration moved the file to.",
        "description": "What the migration did.",
        "applied_at": "When it was applied (UTC; NULL: the file had it before this table existed).",
        "code_version": "chatmem's version and commit that applied it.",
    },
    times="applied_at",
)

ARCHIVE: dict[str, TableDoc] = {
    "schema_migrations": SCHEMA_MIGRATIONS,
    "sources": _doc(
        "Export files",
        "Every export file ingested, once per distinct content (sha256).",
        {
            "id": "Source number.",
            "path": "Where the file was read from.",
            "sha256": "Digest of the file's bytes: the same bytes are never ingested twice.",
            "format": "Detected export format (chatgpt, claude, jsonl, ...).",
            "size_bytes": "File size in bytes.",
            "status": "importing, complete, or partial (some records quarantined or the file was cut short).",
            "imported_at": "When the file was ingested (UTC).",
            "notes": "What went wrong with a partial file, one line per problem.",
        },
        times="imported_at",
        label="path",
    ),
    "conversations": _doc(
        "Conversations",
        "One row per conversation of any export.",
        {
            "id": "The export's own conversation id.",
            "title": "Title given by the chat app.",
            "created_at": "When the conversation started (UTC).",
            "updated_at": "When it was last changed (UTC).",
            "current_node": "The message the app showed last: the end of the active path.",
            "format": "Export format it came from.",
            "message_count": "Messages stored for it, every branch included.",
            "source_id": "The export file that last wrote it.",
            "row_hash": "Digest of the compared columns: an unchanged conversation is not rewritten.",
        },
        times="created_at updated_at",
        label="title",
    ),
    "messages": _doc(
        "Messages",
        "Every message of every branch; the active path is marked and ordered by seq. Full-text search: messages_fts.",
        {
            "uuid": "The export's own message id.",
            "conversation_id": "Its conversation.",
            "parent_id": "The message it answers (NULL for a root).",
            "role": "user, assistant, system or tool.",
            "author": "Author name where the export gives one.",
            "content_type": "text, code, execution_output, thinking, ... (as the export calls it).",
            "text": "The message rendered to text.",
            "created_at": "When it was written (UTC).",
            "is_active": "1 on the conversation's active path (and still in the latest dump).",
            "is_hidden": "1 for messages the app hides (system prompts, memory tool calls).",
            "seq": "Position along the active path (branches numbered after it).",
            "content_hash": "Digest of the text: the key of the embedding cache.",
            "raw": "The export's own JSON for content types chatmem cannot render.",
            "source_id": "The export file that last wrote it.",
        },
        times="created_at",
        flags="is_active is_hidden",
        label="uuid",
    ),
    "quarantine": _doc(
        "Quarantine",
        "Records that could not be used, with where they were and why: nothing is lost.",
        {
            "id": "Row number.",
            "source_id": "The export file.",
            "locator": "Where in the file (JSON path or line number).",
            "reason": "Why it was set aside.",
            "raw": "The record as it was in the file.",
            "conversation_id": "Its conversation, when known.",
        },
    ),
    "message_chronology": _doc(
        "Message chronology",
        "NEXT / PREV along each conversation's active path, by seq (a view).",
        {
            "uuid": "The message.",
            "conversation_id": "Its conversation.",
            "seq": "Its position on the active path.",
            "prev_id": "The message before it.",
            "next_id": "The message after it.",
        },
    ),
    "messages_fts": _doc(
        "Message search",
        "SQLite FTS5 index over messages.text (external content, kept in step by triggers).",
        {"text": "The indexed message text."},
    ),
}

STAGING: dict[str, TableDoc] = {
    "schema_migrations": SCHEMA_MIGRATIONS,
    "runs": _doc(
        "Runs",
        "The run ledger: one row per `chatmem run` (or re-opened by `chatmem stage`).",
        {
            "id": "Run id: UTC start time plus 6 random hex digits.",
            "started_at": "When the run started (UTC).",
            "finished_at": "When it ended (NULL while running, or if it was killed).",
            "status": "running, succeeded or failed.",
            "stages": "The stages the run was asked to do.",
            "exports": "The export files given to it.",
            "settings": "The settings in effect (secrets removed).",
            "code_version": "chatmem's version and commit.",
            "error": "Why it failed.",
        },
        json="stages exports settings",
        times="started_at finished_at",
        label="id",
    ),
    "stage_runs": _doc(
        "Stage runs",
        "One row per stage of a run, with timings, counts, and for a failure the command that re-runs it.",
        {
            "id": "Stage run number.",
            "run_id": RUN_ID,
            "stage": "ingest, segment, embed, extract, concepts, cluster or load.",
            "status": "running, succeeded, skipped or failed.",
            "started_at": "When the stage started (UTC).",
            "finished_at": "When it ended (UTC).",
            "duration_s": "Wall-clock seconds.",
            "input_fingerprint": "Digest of the stage's inputs.",
            "settings": "The stage's settings.",
            "code_version": "chatmem's version and commit.",
            "rows_in": "Rows the stage read.",
            "rows_out": "Rows it wrote.",
            "counts": "The stage's own counts (JSON object).",
            "notes": "Notes, one per line (why a stage was skipped, defaults used).",
            "error": "Why it failed.",
            "rerun_hint": "The command that re-runs the stage.",
        },
        json="settings counts",
        times="started_at finished_at",
    ),
    "ingest_files": _doc(
        "Ingested files",
        "What the ingest stage of each run did with each file.",
        {
            "run_id": RUN_ID,
            "stage_run_id": "The ingest stage run.",
            "path": "The file.",
            "sha256": "Digest of its bytes.",
            "format": "Detected format.",
            "status": "ingested, partial, skipped (same bytes as before) or failed.",
            "conversations": "Conversations read.",
            "messages_read": "Messages read.",
            "messages_inserted": "New messages.",
            "messages_updated": "Messages whose content changed.",
            "messages_unchanged": "Messages already stored as they are.",
            "messages_retired": "Messages a newer dump no longer has (kept, marked inactive).",
            "quarantined": "Records set aside (see archive quarantine).",
            "detail": "Why the file failed or is partial.",
        },
    ),
    "segment_conversations": _doc(
        "Segmented conversations",
        "Which conversations the segment stage has cut, and from what content.",
        {
            "conversation_id": "The conversation.",
            "fingerprint": "Digest of its visible active path: unchanged means not re-cut.",
            "segments": "How many segments it gave.",
            "run_id": RUN_ID,
        },
    ),
    "segments": _doc(
        "Segments",
        "Consecutive windows of one conversation (token budget and topic shifts).",
        {
            "segment_id": "Content key of the segment.",
            "conversation_id": "Its conversation.",
            "ordinal": "Its position in the conversation.",
            "boundary": "Why it starts here: start, budget or topic.",
            "message_count": "Messages in it.",
            "token_estimate": "Estimated tokens (characters / 4).",
            "content_hash": "Digest of its messages' text.",
            "first_message_id": "Its first message.",
            "last_message_id": "Its last message.",
            "first_time": "Time of its first message.",
            "last_time": "Time of its last message.",
            "run_id": RUN_ID,
            "retired_run_id": "The run that retired it (its conversation was re-cut), else NULL.",
        },
        times="first_time last_time",
        label="segment_id",
    ),
    "segment_messages": _doc(
        "Segment messages",
        "Which messages each segment holds, in order.",
        {
            "segment_id": "The segment.",
            "message_id": "A message in it (archive messages.uuid).",
            "position": "Its position in the segment.",
            "run_id": RUN_ID,
        },
    ),
    "extractions": _doc(
        "Extractions",
        "One extraction per (segment content, extractor version/model/prompt): the cache that saves LLM calls.",
        {
            "cache_key": "Digest of the segment content and everything that changes the output.",
            "content_hash": "The segment's content digest.",
            "extractor": "offline or llm.",
            "key_parts": "What went into the cache key (extractor, model, prompt version, ...).",
            "segment_id": "The segment it was made for.",
            "status": "ok or failed.",
            "hypotheses": "The ConceptHypothesis list after the semantic mapper.",
            "hypotheses_proposed": "Hypotheses the extractor proposed.",
            "hypotheses_kept": "Hypotheses that survived the mapper.",
            "reason": "Why it failed.",
            "raw_response": "The LLM's reply as received.",
            "prompt_tokens": "Input tokens.",
            "completion_tokens": "Output tokens.",
            "reasoning_tokens": "Reasoning tokens (part of the output).",
            "run_id": RUN_ID,
        },
        json="key_parts hypotheses",
    ),
    "segment_extractions": _doc(
        "Segment extractions",
        "The extraction each segment currently uses.",
        {"segment_id": "The segment.", "cache_key": "Its extraction (extractions.cache_key).", "run_id": RUN_ID},
    ),
    "mapper_decisions": _doc(
        "Mapper decisions",
        "What the semantic mapper changed, dropped or rejected in each extraction, and by which rule.",
        {
            "cache_key": "The extraction.",
            "ordinal": "Decision number within it.",
            "segment_id": "The segment.",
            "hypothesis": "Index of the hypothesis in the extractor's answer.",
            "field": "The field the rule looked at.",
            "rule": "The rule that decided.",
            "before": "The value before.",
            "after": "The value after (NULL: dropped).",
            "run_id": RUN_ID,
        },
    ),
    "llm_calls": _doc(
        "LLM calls",
        "Every LLM request of the extract stage: request (never the key), reply, tokens, latency, status.",
        {
            "id": "Call number.",
            "run_id": RUN_ID,
            "segment_id": "The segment it was about.",
            "cache_key": "The extraction it fills.",
            "attempt": "Attempt number (retries count up).",
            "api": "chat or responses.",
            "model": "Model name.",
            "reasoning_effort": "Reasoning effort sent (NULL: none).",
            "request": "The request body without the API key.",
            "raw_response": "The reply as received.",
            "prompt_tokens": "Input tokens.",
            "completion_tokens": "Output tokens.",
            "reasoning_tokens": "Reasoning tokens.",
            "latency_s": "Seconds until the reply.",
            "status": "ok, refused, invalid_json, schema_violation, transient_error or error.",
            "error": "The error, when there was one.",
            "started_at": "When the call started (UTC).",
        },
        json="request",
        times="started_at",
    ),
    "concepts": _doc(
        "Concepts",
        "The concept store: one row per concept, with its state and how much evidence supports it.",
        {
            "concept_id": "Stable concept id.",
            "title": "Its name.",
            "title_key": "The folded title: unique, so no two concepts share a name.",
            "type": "Ontology type (project, person, preference, ...).",
            "description": "What it is.",
            "state": "active, weak, merged, split or archived.",
            "confidence": "0..1.",
            "aliases": "Other names it resolves from.",
            "revision_count": "How often evidence was attached or it was refined.",
            "evidence_count": "Evidence spans supporting it (concept_evidence).",
            "first_seen": "Time of its earliest evidence.",
            "last_seen": "Time of its latest evidence.",
            "merged_into": "The concept it was merged into.",
            "extractors": "Which extractors proposed it.",
            "created_run_id": "The run that created it.",
            "run_id": "The last run that changed it.",
            "settled": "1 once the concept loop has settled its state.",
        },
        json="aliases extractors",
        times="first_seen last_seen",
        flags="settled",
        label="title",
    ),
    "concept_evidence": _doc(
        "Concept evidence",
        "The verbatim spans of messages that support each concept.",
        {
            "concept_id": "The concept.",
            "message_id": "The message cited (archive messages.uuid).",
            "text_key": "Folded span text (part of the key).",
            "text": "The span, verbatim from the message.",
            "confidence": "0..1.",
            "segment_id": "The segment it was extracted from.",
            "created_at": "The message's time.",
            "hypothesis_type": "The type the hypothesis gave.",
            "extractor": "offline or llm.",
            "run_id": RUN_ID,
        },
        times="created_at",
    ),
    "concept_relations": _doc(
        "Concept relations",
        "Typed relations between concepts (CAUSES, SUPPORTS, INSTANCE_OF, ...).",
        {
            "concept_id": "The source concept.",
            "relation": "Relation type.",
            "target_id": "The target concept.",
            "confidence": "0..1.",
            "run_id": RUN_ID,
        },
    ),
    "concept_transitions": _doc(
        "Concept transitions",
        "Every state change of a concept and why (created, weak, active, merged, split, archived).",
        {
            "concept_id": "The concept.",
            "ordinal": "Transition number.",
            "from_state": "State before (NULL: created).",
            "to_state": "State after.",
            "reason": "Why.",
            "other_id": "The other concept of a merge or split.",
            "run_id": RUN_ID,
        },
    ),
    "concept_inputs": _doc(
        "Concept inputs",
        "Every hypothesis the concept loop handled and what it decided: re-runs skip these.",
        {
            "input_key": "Extraction cache key plus hypothesis index.",
            "segment_id": "The segment.",
            "title": "The hypothesis title.",
            "decision": "create, attach, refine, reject or duplicate.",
            "concept_id": "The concept it created or joined.",
            "method": "How the name resolved (exact, alias, fuzzy, similarity).",
            "score": "The resolver's score.",
            "run_id": RUN_ID,
        },
    ),
    "embeddings": _doc(
        "Embeddings",
        "The embedding cache: one vector per (model, text digest).",
        {
            "model": "Embedding model.",
            "content_hash": "Digest of the text.",
            "dim": "Vector length.",
            "vector": "float32 vector, little-endian bytes.",
            "run_id": RUN_ID,
        },
    ),
    "embedding_items": _doc(
        "Embedded items",
        "Which message, segment or concept has which cached vector.",
        {
            "kind": "message, segment or concept.",
            "item_id": "Its id.",
            "model": "Embedding model.",
            "content_hash": "Digest of its text (embeddings.content_hash).",
            "run_id": RUN_ID,
        },
    ),
    "cluster_runs": _doc(
        "Cluster runs",
        "What the cluster stage made of a run: topics, outlier share, validity, best parameters.",
        {
            "run_id": RUN_ID,
            "status": "clustered or skipped.",
            "model": "Embedding model of the points.",
            "study_name": "The Optuna study (in optuna.db).",
            "points": "Segments clustered.",
            "topics": "Topics found.",
            "outlier_share": "Share of points left as outliers after outlier handling.",
            "outlier_share_raw": "Share HDBSCAN left as noise.",
            "validity": "Relative DBCV of the result.",
            "params": "Best UMAP / HDBSCAN parameters.",
            "seconds": "Seconds per step.",
            "notes": "Notes, one per line (why it was skipped, what was reused).",
        },
        json="params seconds",
    ),
    "topics": _doc(
        "Topics",
        "Topics of a run: label, size, c-TF-IDF keywords, representative segments.",
        {
            "run_id": RUN_ID,
            "topic": "Topic number in the run (0 = largest).",
            "topic_uid": "Content key: model plus member segments; an unchanged topic keeps it across runs.",
            "label": "Label (LLM-named when one is configured).",
            "size": "Member segments.",
            "keywords": "c-TF-IDF keywords, best first.",
            "representatives": "Representative segment ids.",
        },
        json="keywords representatives",
        label="label",
    ),
    "topic_links": _doc(
        "Topic links",
        "BELONGS_TO edges: segment or concept to topic, weighted.",
        {
            "run_id": RUN_ID,
            "kind": "segment or concept.",
            "item_id": "The segment or concept.",
            "topic": "Topic number.",
            "topic_uid": "Topic content key.",
            "weight": "0..1.",
            "source": "hdbscan (member), predicted or reassigned (outlier handling).",
        },
    ),
    "cluster_points": _doc(
        "Topic map points",
        "2-D map coordinates of each segment, for the topic map.",
        {
            "run_id": RUN_ID,
            "segment_id": "The segment.",
            "x": "Map x.",
            "y": "Map y.",
            "topic": "Its topic (-1: noise).",
        },
    ),
    "topic_labels": _doc(
        "Topic labels",
        "LLM topic labels cached by (topic, model, prompt version): a re-run makes no call.",
        {
            "topic_uid": "Topic content key.",
            "model": "LLM model.",
            "prompt_version": "Prompt version.",
            "label": "The label.",
        },
    ),
    "cluster_trials": _doc(
        "Optuna trials",
        "Every Optuna trial of a cluster study.",
        {
            "study_name": "The study.",
            "number": "Trial number.",
            "run_id": RUN_ID,
            "state": "COMPLETE, PRUNED, FAIL, ...",
            "value": "Objective value.",
            "params": "Trial parameters.",
            "topics": "Topics the trial produced.",
            "noise_share": "Its noise share.",
            "validity": "Its relative DBCV.",
            "seconds": "Seconds it took.",
        },
        json="params",
    ),
    "load_batches": _doc(
        "Load batches",
        "Every UNWIND batch the load stage sent to the graph, and how it went.",
        {
            "run_id": RUN_ID,
            "stage_run_id": "The load stage run.",
            "target": "The graph it went to.",
            "layer": "Node or edge layer (Conversation, Message, NEXT, ...).",
            "kind": "upsert or delete.",
            "batch_no": "Batch number in the layer.",
            "rows": "Rows in the batch.",
            "written": "Rows the graph reported written.",
            "status": "running, done or failed.",
            "attempts": "Attempts (transient errors are retried).",
            "started_at": "When it started (UTC).",
            "finished_at": "When it ended (UTC).",
            "duration_s": "Seconds.",
            "first_key": "Its first row key.",
            "last_key": "Its last row key.",
            "error": "Why it failed.",
        },
        times="started_at finished_at",
    ),
    "load_manifest": _doc(
        "Load manifest",
        "What each graph holds: key and hash of every row, so a re-run sends only what changed.",
        {
            "target": "The graph.",
            "layer": "Node or edge layer.",
            "key": "Row key.",
            "row_hash": "Hash of the row as sent.",
            "run_id": RUN_ID,
        },
    ),
    "load_targets": _doc(
        "Graph targets",
        "Graphs the load stage has written to.",
        {
            "target": "Target key.",
            "uri": "Bolt URI (no credentials).",
            "database": "Database name.",
            "watermark": "Up to where it is loaded.",
            "last_run_id": "The last run that loaded it.",
            "loaded_at": "When (UTC).",
        },
        times="loaded_at",
    ),
}

DATABASES: dict[str, dict[str, TableDoc]] = {"archive": ARCHIVE, "staging": STAGING}


def table_doc(table: str) -> TableDoc | None:
    """The entry of a table of either database (table names do not repeat across the two)."""
    return ARCHIVE.get(table) or STAGING.get(table)
