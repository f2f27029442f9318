"""What `chatmem inspect` shows in Datasette: the metadata (titles, descriptions, labels) and the canned queries.

Pure data: the flows layer (flows/inspect_server.py) hands it to Datasette. Table and column descriptions come
from `staging.table_docs`; the canned queries answer the questions users ask of a run. Queries of the staging
database may read the archive as `archive.` (the server attaches archive.db read-only to staging connections),
so a concept's evidence shows the messages it cites and their conversation.

Every query takes its parameters as text; an empty optional parameter means "all" (`:run_id = ''`).
"""

from __future__ import annotations

from typing import Any

from staging.table_docs import TableDoc, databases

COST = (
    "round((c.prompt_tokens * coalesce(json_extract(r.settings, '$.extract.llm.input_usd_per_mtok'), 0)"
    " + c.completion_tokens * coalesce(json_extract(r.settings, '$.extract.llm.output_usd_per_mtok'), 0))"
    " / 1e6, 6)"
)

STAGING_QUERIES: dict[str, dict[str, str]] = {
    "run_stages": {
        "title": "Runs and their stages",
        "description": "Every run (or one: run_id) with each stage's status, duration and row counts.",
        "sql": "SELECT r.id AS run_id, r.status AS run_status, r.started_at, s.stage, s.status, s.duration_s,"
        " s.rows_in, s.rows_out, s.counts FROM runs r LEFT JOIN stage_runs s ON s.run_id = r.id"
        " WHERE :run_id = '' OR r.id = :run_id ORDER BY r.started_at DESC, s.id",
    },
    "stage_failures": {
        "title": "Failed stages and how to re-run them",
        "description": "Stage runs that failed (all runs, or one: run_id), with the error and the re-run command.",
        "sql": "SELECT run_id, stage, finished_at, error, rerun_hint FROM stage_runs WHERE status = 'failed'"
        " AND (:run_id = '' OR run_id = :run_id) ORDER BY id DESC",
    },
    "run_llm_calls": {
        "title": "LLM calls of a run",
        "description": "Every LLM call of a run with tokens, latency, status and cost (from the run's prices).",
        "sql": "SELECT c.id, c.segment_id, c.model, c.attempt, c.status, c.prompt_tokens, c.completion_tokens,"
        f" c.reasoning_tokens, c.latency_s, {COST} AS cost_usd, c.error FROM llm_calls c"
        " JOIN runs r ON r.id = c.run_id WHERE c.run_id = :run_id ORDER BY c.id",
    },
    "concept_evidence": {
        "title": "A concept's evidence",
        "description": "The verbatim spans behind a concept, the messages they cite and their conversation.",
        "sql": "SELECT e.concept_id, k.title AS concept, e.text AS span, e.message_id, m.role, m.created_at,"
        " m.text AS message_text, m.conversation_id, v.title AS conversation, e.segment_id, e.extractor"
        " FROM concept_evidence e JOIN concepts k ON k.concept_id = e.concept_id"
        " LEFT JOIN archive.messages m ON m.uuid = e.message_id"
        " LEFT JOIN archive.conversations v ON v.id = m.conversation_id"
        " WHERE e.concept_id = :concept_id ORDER BY m.created_at, e.message_id",
    },
    "concept_mapper_decisions": {
        "title": "Mapper decisions behind a concept",
        "description": "What the semantic mapper changed, dropped or rejected in the extractions a concept came from.",
        "sql": "SELECT i.concept_id, i.decision AS loop_decision, i.title AS hypothesis_title, d.segment_id,"
        " d.hypothesis, d.field, d.rule, d.before, d.after, d.run_id FROM concept_inputs i"
        " JOIN mapper_decisions d ON d.cache_key = substr(i.input_key, 1, instr(i.input_key, ':') - 1)"
        " WHERE i.concept_id = :concept_id ORDER BY d.segment_id, d.ordinal",
    },
    "topic_members": {
        "title": "A topic's members and keywords",
        "description": "The segments (and concepts) of one topic of a run, with the topic's label and keywords.",
        "sql": "SELECT t.topic, t.label, t.keywords, l.kind, l.item_id, l.weight, l.source,"
        " s.conversation_id, s.first_message_id FROM topics t"
        " JOIN topic_links l ON l.run_id = t.run_id AND l.topic = t.topic"
        " LEFT JOIN segments s ON l.kind = 'segment' AND s.segment_id = l.item_id"
        " WHERE t.run_id = :run_id AND t.topic = CAST(:topic AS INTEGER) ORDER BY l.kind DESC, l.weight DESC",
    },
    "load_batches_of_run": {
        "title": "Load batches",
        "description": "The graph batches of a run (or all: leave run_id empty): layer, rows, status, seconds.",
        "sql": "SELECT run_id, target, layer, kind, batch_no, rows, written, status, attempts, duration_s, error"
        " FROM load_batches WHERE :run_id = '' OR run_id = :run_id ORDER BY run_id DESC, layer, kind, batch_no",
    },
}

ARCHIVE_QUERIES: dict[str, dict[str, str]] = {
    "quarantined": {
        "title": "Quarantined records",
        "description": "Records set aside by ingest, with the file, where in it, and why.",
        "sql": "SELECT q.id, s.path AS source, q.locator, q.reason, q.conversation_id, q.raw FROM quarantine q"
        " JOIN sources s ON s.id = q.source_id ORDER BY q.id",
    },
    "search_messages": {
        "title": "Search messages",
        "description": 'Full-text search over message text (FTS5 syntax: words, "a phrase", prefix*, OR, NOT;'
        " text that is not valid FTS5, like c++ or a:b, searches for its words).",
        "sql": "SELECT m.uuid, m.conversation_id, m.role, m.created_at,"
        " snippet(messages_fts, 0, '[', ']', '…', 16) AS snippet FROM messages_fts"
        " JOIN messages m ON m.rowid = messages_fts.rowid WHERE messages_fts MATCH chatmem_match(:q)"
        " ORDER BY rank LIMIT 100",
    },
}

QUERIES = {"staging": STAGING_QUERIES, "archive": ARCHIVE_QUERIES}


def _table_metadata(doc: TableDoc) -> dict[str, Any]:
    meta: dict[str, Any] = {"title": doc.title, "description": doc.description, "columns": dict(doc.columns)}
    if doc.label_column:
        meta["label_column"] = doc.label_column
    return meta


def metadata() -> dict[str, Any]:
    """Datasette metadata for the two databases: every table and column described, the canned queries."""
    described: dict[str, Any] = {}
    for name, tables in databases().items():
        described[name] = {
            "title": "archive.db: the source of truth" if name == "archive" else "staging.db: what every run did",
            "tables": {table: _table_metadata(doc) for table, doc in tables.items()},
            "queries": QUERIES[name],
        }
    # the search box on the messages table uses this index (Datasette would also find it by its content=)
    described["archive"]["tables"]["messages"] |= {"fts_table": "messages_fts", "fts_pk": "rowid"}
    return {
        "title": "chatmem",
        "description": "The archive and the staging ledger of one data dir, read-only.",
        "databases": described,
    }
