"""The load stage: archive.db and staging.db -> the graph over Bolt (Neo4j 5, or the local ArcadeDB server),
as a streaming diff of each layer (layers.py, plan.py) against the manifest of what the graph holds, written in
UNWIND batches (cypher.py), resumable (stage.py).

`stage.run(ctx) -> Outcome` is called by the runner (flows/stage_runner.py, clients/stage.py).
"""
