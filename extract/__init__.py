"""The segment, extract and concepts stages: active paths cut into segments (stage_segment.py, segment.py),
segments -> ConceptHypothesis objects by the offline extractor or an LLM through the semantic mapper
(stage_extract.py, offline.py, llm.py, mapper.py), and hypotheses -> the concept store by the concept loop
(stage_concepts.py, concept_loop.py, resolve.py).

Each stage module's `run(ctx) -> Outcome` is called by the runner (flows/stage_runner.py, clients/stage.py).
"""
