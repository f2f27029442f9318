"""Shared clients: what more than one stage package talks to.

- `embedders`, `embedders_http`, `embed_cache`: embedding models (the packaged MiniLM, an OpenAI-compatible
  endpoint) and the vector cache in staging.db;
- `graph`, `graph_server`, `graph_target`, `graph_errors`: the Bolt graph (Neo4j, or the local ArcadeDB server);
- `llm`: the OpenAI-compatible client, its one retry predicate and backoff;
- `progress`: the progress protocol every long stage accepts.

It sits between the stage packages and staging: stage packages import it, it imports staging and contracts,
and it never imports a stage package.
"""
