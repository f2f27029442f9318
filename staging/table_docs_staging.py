"""What every table and column of staging.db means (archive.db's, and the model: staging/table_docs.py)."""

from __future__ import annotations

from dataclasses import replace

from staging.table_docs import RUN_ID, SCHEMA_MIGRATIONS, TableDoc, doc

STAGING: dict[str, TableDoc] = {
    "schema_migrations": SCHEMA_MIGRATIONS,
    "runs": doc(
        "Runs",
        "The run ledger: one row per `chatmem run` (or re-opened by `chatmem stage`).",
        {
            "id": "Run id: UTC start time to the second, then its microseconds as 6 hex digits (ids sort by start).",
            "started_at": "When the run started (UTC).",
            "finished_at": "When it ended (NULL while running, or if it was killed).",
            "status": "running, succeeded, failed or interrupted (its process is gone: see `staging runs`).",
            "stages": "The stages the run was asked to do.",
            "exports": "The export files given to it.",
            "settings": "The settings in effect (secrets removed).",
            "code_version": "chatmem's version and commit.",
            "error": "Why it failed.",
            "pid": "The process that ran it: a 'running' row whose process is gone is shown as interrupted.",
            "host": "The machine that process ran on (liveness is judged only on the same host).",
            "pid_start": "When that process started (clock ticks since boot): a reused pid is another process.",
        },
        json="stages exports settings",
        times="started_at finished_at",
        label="id",
    ),
    "stage_runs": doc(
        "Stage runs",
        "One row per stage of a run, with timings, counts, and for a failure the command that re-runs it.",
        {
            "id": "Stage run number.",
            "run_id": RUN_ID,
            "stage": "The stage's name (see flows/registry.py for the order).",
            "status": "running, succeeded, skipped, failed or interrupted (its process is gone).",
            "started_at": "When the stage started (UTC).",
            "finished_at": "When it ended (UTC).",
            "duration_s": "Wall-clock seconds.",
            "input_fingerprint": "Digest of the stage's code, settings and inputs (unchanged: skipped).",
            "settings": "The stage's settings.",
            "code_version": "chatmem's version and commit.",
            "rows_in": "Rows the stage read.",
            "rows_out": "Rows it wrote.",
            "counts": "The stage's own counts (JSON object).",
            "notes": "Notes, one per line (why a stage was skipped, defaults used).",
            "error": "Why it failed.",
            "rerun_hint": "The command that re-runs the stage.",
            "pid": "The process that ran it.",
            "host": "The machine that process ran on.",
            "pid_start": "When that process started (clock ticks since boot).",
        },
        json="settings counts",
        times="started_at finished_at",
    ),
    "ingest_files": doc(
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
    "segment_conversations": doc(
        "Segmented conversations",
        "Which conversations the segment stage has cut, and from what content.",
        {
            "conversation_id": "The conversation.",
            "fingerprint": "Digest of its visible active path: unchanged means not re-cut.",
            "segments": "How many segments it gave.",
            "run_id": RUN_ID,
        },
    ),
    "segment_mark": doc(
        "Segment stage: archive mark",
        "Where archive.db stood when the segments were last brought up to date (staging/archive_changes.py): the"
        " next run reads only the conversations changed since.",
        {
            "id": "Always 1.",
            "archive_mark": "The mark (largest rowids, change version, origin, newest message's uuid).",
            "params": "The segment parameters the mark holds for: other ones read every conversation again.",
        },
        json="archive_mark",
    ),
    "segments": doc(
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
    "segment_messages": doc(
        "Segment messages",
        "Which messages each segment holds, in order.",
        {
            "segment_id": "The segment.",
            "message_id": "A message in it (archive messages.uuid).",
            "position": "Its position in the segment.",
            "run_id": RUN_ID,
        },
    ),
    "staging_changes": doc(
        "Staging changes",
        "What changed for the graph's staging layers, logged by triggers (migrations 12 and 16): the conversations"
        " re-segmented, the messages whose concept evidence changed, the concepts changed, the cluster runs deleted"
        " or rewritten. The load reads only the rows of the ids logged since its last mark, and of the topics and"
        " topic links that differ from the cluster run the mark names (load/staging_delta.py,"
        " staging/staging_changes.py).",
        {
            "kind": "segment (id: a conversation), evidence (id: a message), concept (id: a concept) or cluster"
            " (id: a cluster run).",
            "id": "What changed; empty when a change could not be traced to one (the next load diffs whole).",
            "version": "Raised on each change: the load reads the ids above the version it last loaded.",
        },
    ),
    "extractions": doc(
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
    "segment_extractions": doc(
        "Segment extractions",
        "The extraction each segment currently uses.",
        {"segment_id": "The segment.", "cache_key": "Its extraction (extractions.cache_key).", "run_id": RUN_ID},
    ),
    "mapper_decisions": doc(
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
    "llm_calls": doc(
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
    "concepts": doc(
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
    "concept_evidence": doc(
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
    "concept_relations": doc(
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
    "concept_transitions": doc(
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
    "concept_inputs": doc(
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
    "embeddings": doc(
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
    "embedding_items": doc(
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
    "embedded_segments": doc(
        "Embedded segments",
        "Which content each current segment's message and segment vectors were last derived from.",
        {
            "segment_id": "The segment (segments.segment_id).",
            "model": "The embedding model and how its messages were read ('MODEL|text-v2': cluster/stage_embed.py).",
            "content_hash": "The segment's content_hash when it was embedded: equal to today's means nothing to redo.",
            "run_id": RUN_ID,
        },
    ),
    "cluster_runs": doc(
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
    "topics": doc(
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
    "topic_links": doc(
        "Topic links",
        "BELONGS_TO edges: segment or concept to topic, weighted; a view of topic_link_rows: each kept cluster"
        " run's live rows (staging.db migration 10).",
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
    "cluster_points": doc(
        "Topic map points",
        "2-D map coordinates of each segment, for the topic map; a view of cluster_point_rows: each kept cluster"
        " run's live rows (staging.db migration 10).",
        {
            "run_id": RUN_ID,
            "segment_id": "The segment.",
            "x": "Map x.",
            "y": "Map y.",
            "topic": "Its topic (-1: noise).",
        },
    ),
    "topic_labels": doc(
        "Topic labels",
        "LLM topic labels cached by (topic, model, prompt version): a re-run makes no call.",
        {
            "topic_uid": "Topic content key.",
            "model": "LLM model.",
            "prompt_version": "Prompt version.",
            "label": "The label.",
        },
    ),
    "cluster_trials": doc(
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
    "load_batches": doc(
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
    "load_manifest": doc(
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
    "load_manifest_counts": doc(
        "Load manifest counts",
        "How many rows the manifest lists per graph and layer, kept by triggers on load_manifest (migration 13):"
        " compared with the graph's own counts before a load trusts the manifest.",
        {
            "target": "The graph.",
            "layer": "Node or edge layer.",
            "rows": "Manifest rows of the layer for the graph.",
        },
    ),
    "load_targets": doc(
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
STAGING.update(
    {
        "template_extractions": doc(
            "Template rule: extractions read",
            "The current extractions the template rule's kept state was built from (staging/template_state.py).",
            {
                "seq": "The segment_extractions row (its rowid: the order the rule reads extractions in).",
                "segment_id": "The segment.",
                "cache_key": "The extraction.",
                "extraction_run_id": "The run that wrote the extraction.",
                "conversation_id": "The segment's conversation.",
                "sentence_keys": "The keys of the evidence sentences it cites.",
                "hypotheses": "How many hypotheses it holds.",
            },
            json="sentence_keys",
        ),
        "template_spans": doc(
            "Template rule: evidence spans",
            "Every evidence span of those extractions, by sentence, in reading order.",
            {
                "sentence_key": "The sentence (64 bits of blake2b of its stripped text).",
                "seq": "The extraction (template_extractions.seq).",
                "ord": "The span's place among the extraction's spans.",
                "message_id": "The message it cites.",
            },
        ),
        "template_repeated": doc(
            "Template rule: repeated sentences",
            "Evidence sentences cited in three conversations or more, and whether the rule found them boilerplate.",
            {
                "sentence_key": "The sentence.",
                "text": "Its text.",
                "rank_seq": "Where a second conversation first cited it: the extraction...",
                "rank_ord": "...and the span (the order the rule takes repeated sentences in).",
                "found": "1: boilerplate (a prompt template's sentence), no evidence of a concept.",
            },
            flags="found",
        ),
        "template_places": doc(
            "Template rule: places",
            "Each conversation citing a repeated sentence, in order of first citation, and the message read there.",
            {
                "sentence_key": "The sentence.",
                "position": "Order of first citation.",
                "conversation_id": "The conversation.",
                "message_id": "The message the rule reads (empty: none found).",
            },
        ),
        "template_mark": doc(
            "Template rule: archive mark",
            "Where archive.db stood when the kept state was last brought up to date (staging/archive_changes.py).",
            {"id": "Always 1.", "mark": "The mark (largest rowids, change version, origin, newest message's uuid)."},
            json="mark",
        ),
        "resolver_meta": doc(
            "Resolver index: version",
            "One row: the version of the resolver's keys the resolver_* tables hold (extract/resolve_stored.py);"
            " another version is rebuilt by the next concepts run.",
            {"version": "extract.resolve_stored.keys_version() when written: VERSION and a digest of the keys."},
        ),
        "resolver_rows": doc(
            "Resolver index: concept rows",
            "Each concept row the concept resolver's kept index was built from (derived from concepts; emptied, the"
            " next concepts run builds it again). The row_* columns are compared with concepts to find changed rows.",
            {
                "concept_id": "The concept row (concepts.concept_id).",
                "merged": "1 when the row was merged into another concept.",
                "owner": "The concept its names resolve to (the survivor of a merge).",
                "type": "The owner's type.",
                "names": "The row's names: [title, *aliases].",
                "row_merged": "The row's merged flag as read from concepts.",
                "row_merged_into": "The row's merged_into as read from concepts.",
                "row_type": "The row's type as read from concepts.",
                "row_title": "The row's title as read from concepts.",
                "row_aliases": "The row's aliases as read from concepts (JSON as stored there).",
            },
            json="names",
            flags="merged row_merged",
        ),
        "resolver_claims": doc(
            "Resolver index: key claims",
            "Each (match key, concept row) of the rows' names: which rows claim a key (the first in the resolver's"
            " order owns it).",
            {"key": "A name's match key (case, punctuation and plurals folded).", "concept_id": "The claiming row."},
        ),
        "resolver_entries": doc(
            "Resolver index: entries",
            "Per owner, its resolver entry as built: type, names, the match keys it owns, its index keys and the"
            " words it gave the typo index.",
            {
                "owner": "The owning concept.",
                "type": "Its type.",
                "names": "[[name key, [words]], ...] in the order added.",
                "keys": "The match keys it owns.",
                "index_keys": "Its index keys (encoded).",
                "words": "The words it gave the typo index.",
            },
            json="names keys index_keys words",
        ),
        "resolver_exact": doc(
            "Resolver index: exact keys",
            "Match key -> the concept that owns it.",
            {"key": "A match key.", "owner": "The owning concept."},
        ),
        "resolver_index": doc(
            "Resolver index: index keys",
            "(index key, owner): one row per owner holding the key (the resolver's candidate lookup).",
            {"index_key": "An encoded index key.", "owner": "A concept holding it."},
        ),
        "resolver_words": doc(
            "Resolver index: typo vocabulary",
            "The typo index's vocabulary: each word and how many entries gave it.",
            {"word": "A word of a concept's names.", "entries": "How many entries gave it."},
        ),
        "garden_meta": doc(
            "Garden state: meta",
            "One row (key 'state'): the version of the garden_* tables, the settings the garden's decisions were made"
            " with and the archive mark they were taken at (garden/incremental.py); another version or other settings"
            " are rebuilt by the next garden run.",
            {"key": "Always 'state'.", "value": "JSON: version, settings, archive (the archive mark)."},
            json="value",
        ),
        "garden_dirty": doc(
            "Garden state: concepts to re-judge",
            "Concepts whose evidence rows were inserted, updated or deleted since the last garden run (triggers on"
            " concept_evidence); the garden empties it.",
            {"concept_id": "The concept (it may no longer be in concepts: its evidence is then dangling)."},
        ),
        "garden_concepts": doc(
            "Garden state: concept rows judged",
            "Each concept row as the last garden run left it: the columns a staleness decision reads and its names,"
            " compared with concepts to find the rows changed since.",
            {
                "concept_id": "The concept.",
                "state": "Its state then.",
                "confidence": "Its confidence then.",
                "evidence_count": "Its evidence count then.",
                "merged_into": "Its merge pointer then.",
                "title": "Its title then.",
                "aliases": "Its aliases then (JSON as stored in concepts).",
            },
        ),
        "garden_names": doc(
            "Garden state: concept names",
            "Every concept's names in order (its id, title, aliases) with their folded key: what the facts' concept"
            " links are folded from (garden/names.py).",
            {
                "concept_id": "The concept.",
                "ord": "The name's position (0: the id, 1: the title, then the aliases).",
                "name": "The name as stored.",
                "key": "The name folded (case and spaces), as facts' subjects and values are.",
            },
        ),
        "garden_name_map": doc(
            "Garden state: folded names",
            "Folded name -> the concept the facts link it to (the survivor of a merge).",
            {"key": "A folded name.", "concept_id": "The concept it links to."},
        ),
        "garden_fact_dirty": doc(
            "Garden state: fact groups to redo",
            "The (subject, attribute) groups whose current statements may have changed since the last garden run,"
            " logged by triggers on fact_mentions, segment_extractions and segments; the garden empties it.",
            {"subject": "The facts' subject.", "attribute": "The facts' attribute."},
        ),
        "garden_fact_times": doc(
            "Garden state: statement times",
            "Each fact mention's message time in archive.db, as the garden last read it.",
            {
                "message_id": "The message (messages.uuid).",
                "created_at": "Its time (empty: none, or not in the archive).",
            },
            times="created_at",
        ),
        "garden_places": doc(
            "Garden state: evidence messages' places",
            "Each evidence message's source and conversation in archive.db, as the garden last read them.",
            {
                "message_id": "The message (messages.uuid).",
                "source_id": "Its source (empty: not in the archive).",
                "conversation_id": "Its conversation (empty: not in the archive).",
            },
        ),
        "garden_last": doc(
            "Garden state: last evidence per source",
            "Per concept and source, the time of its last evidence there (indexed by source and time: a source's"
            " newest message moving finds the concepts it ages).",
            {"concept_id": "The concept.", "source_id": "The source.", "last_at": "Its last evidence time there."},
            times="last_at",
        ),
        "garden_counts": doc(
            "Garden state: evidence per conversation",
            "Per conversation and concept, how many of the concept's evidence rows are in that conversation.",
            {"conversation_id": "The conversation.", "concept_id": "The concept.", "n": "Its evidence rows there."},
        ),
        "garden_kept": doc(
            "Garden state: kept concepts",
            "Each conversation's keep_per_conversation best-evidenced live or archived concepts (ties by id): what"
            " the conversation is about, never archived as stale.",
            {"conversation_id": "The conversation.", "concept_id": "A concept it keeps."},
        ),
        "garden_sources": doc(
            "Garden state: newest message per source",
            "Per source, its newest message time and a message that has it.",
            {"source_id": "The source.", "newest": "Its newest message time.", "witness": "A message with that time."},
            times="newest",
        ),
        "template_drops": doc(
            "Template rule: replays skipped",
            "Conversations whose every unfinished hypothesis the rule dropped when last replayed, or whose hypotheses"
            " left unfinished are the ones it dropped, skipped until an event forgets them: the archive or their"
            " extractions change, a sentence they cite is found or lost (extract/template_drops.py).",
            {
                "conversation_id": "The conversation.",
                "signature": "Digest of what it was, or will be, handed: the boilerplate sentences, its unfinished"
                " extractions.",
                "dropped": "How many hypotheses it dropped.",
            },
        ),
    }
)
STAGING["current_segments"] = replace(
    STAGING["segments"],
    title="Current segments",
    description="The segments no newer segmentation of their conversation retired: a view of segments"
    " WHERE retired_run_id IS NULL (staging.db migration 8), what every later stage reads.",
    columns={**STAGING["segments"].columns, "retired_run_id": "Always NULL here (the segment is current)."},
)
STAGING["topic_link_rows"] = replace(
    STAGING["topic_links"],
    title="Topic link rows",
    description="The BELONGS_TO links, each stored once and shared by the cluster runs it belongs to (docs/runs.md):"
    " live at run R when run_id <= R and retired_run_id is empty or after R.",
    columns={
        **STAGING["topic_links"].columns,
        "run_id": "The cluster run that wrote it.",
        "retired_run_id": "The cluster run that retired it (empty while current).",
    },
)
STAGING["cluster_point_rows"] = replace(
    STAGING["cluster_points"],
    title="Topic map point rows",
    description="The topic map's points, each stored once and shared by the cluster runs it belongs to (docs/runs.md).",
    columns={
        **STAGING["cluster_points"].columns,
        "run_id": "The cluster run that wrote it.",
        "retired_run_id": "The cluster run that retired it (empty while current).",
    },
)
