"""The embedding and topic stages: embed (segments and their messages, stage_embed.py), embed_concepts
(stage_embed_concepts.py) and cluster (stage.py: UMAP -> HDBSCAN tuned by Optuna, topics with c-TF-IDF or LLM
labels, BELONGS_TO links; assign.py places new segments in the saved model between full fits).

Each stage module's `run(ctx) -> Outcome` is called by the runner (flows/stage_runner.py, clients/stage.py).
"""
