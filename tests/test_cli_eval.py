"""`chatmem eval extraction` against the fake OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from flows.cli import cli
from tests import llm_guard, llm_server
from tests.llm_server import FakeLLMServer, Reply, quoting_responder

fake_llm = llm_server.fake_llm
no_real_model_requests = llm_guard.no_real_model_requests


def invoke(*argv: str) -> Result:
    return CliRunner().invoke(cli, list(argv), catch_exceptions=False)


def eval_json(server: FakeLLMServer, data_dir: Path, *extra: str) -> dict[str, Any]:
    argv = ["--data-dir", str(data_dir), "eval", "extraction", "--model", "m", "--base-url", server.base_url]
    result = invoke(*argv, "--json", *extra)
    assert result.exit_code == 0, result.output
    return dict(json.loads(result.stdout))


def test_eval_help_has_an_example() -> None:
    """Both the group and the command say how they are used, with an Example line."""
    for argv in (("eval", "--help"), ("eval", "extraction", "--help")):
        result = invoke(*argv)
        assert result.exit_code == 0 and "Example: chatmem eval extraction" in result.output


def test_eval_reports_adherence_determinism_evidence_and_tokens(
    fake_llm: FakeLLMServer, data_dir: Path, jsonl_export: Path
) -> None:
    """A model that always quotes real text: full adherence, determinism and evidence validity; tokens counted."""
    fake_llm.responder = quoting_responder()
    report = eval_json(fake_llm, data_dir, "--export", str(jsonl_export), "--repeat", "3", "--segments", "2")
    assert (report["segments"], report["repeat"], report["replies"]) == (2, 3, 6)
    assert report["schema_adherence"] == 1.0 and report["determinism_jaccard"] == 1.0
    assert report["identical_replies"] == 1.0
    assert report["evidence_validity"] == 1.0 and report["evidence_spans_kept"] == 6
    assert report["tokens_per_segment"] == {"prompt": 100.0, "completion": 50.0, "reasoning": 10.0}
    assert report["failures"] == {} and "notes.jsonl" in report["source"]
    assert len(fake_llm.model_requests()) == 6
    assert {r.body["reasoning_effort"] for r in fake_llm.model_requests()} == {"low"}


def test_eval_counts_what_the_mapper_corrected(fake_llm: FakeLLMServer, data_dir: Path, jsonl_export: Path) -> None:
    """Replies with type 'Projects' are off-contract (adherence 0) but mapped: the corrections are counted by rule."""
    quoting = quoting_responder()

    def near_miss(body: dict[str, Any]) -> Reply:
        data = json.loads(quoting(body).content or "")
        data["hypotheses"][0]["type"] = "Projects"
        return Reply.text(json.dumps(data))

    fake_llm.responder = near_miss
    report = eval_json(fake_llm, data_dir, "--export", str(jsonl_export), "--repeat", "1", "--segments", "2")
    assert report["schema_adherence"] == 0.0 and report["hypotheses_kept_per_segment"] == 1.0
    assert report["mapper_rules"]["type_synonym"] == 2


def test_eval_reports_failures_by_kind(fake_llm: FakeLLMServer, data_dir: Path, jsonl_export: Path) -> None:
    """A refusal and invalid JSON are counted as failures by kind, with examples; effort and api are passed on."""
    fake_llm.reply_with(Reply.refused("No."), Reply.text("{not json"))
    report = eval_json(
        fake_llm, data_dir, "--export", str(jsonl_export), "--repeat", "1", "--segments", "2", "--effort", "high"
    )
    assert report["failures"] == {"invalid_json": 1, "refused": 1} and len(report["examples"]) == 2
    assert report["effort"] == "high" and {r.body["reasoning_effort"] for r in fake_llm.model_requests()} == {"high"}


def test_eval_defaults_to_the_demo_export(fake_llm: FakeLLMServer, data_dir: Path) -> None:
    """With no segments in the data dir and no --export, the bundled demo is parsed on the fly; text output."""
    fake_llm.responder = quoting_responder()
    argv = ["--data-dir", str(data_dir), "eval", "extraction", "--model", "m", "--base-url", fake_llm.base_url]
    result = invoke(*argv, "--repeat", "1", "--segments", "2")
    assert result.exit_code == 0, result.output
    assert "longmemeval-demo.zip (parsed on the fly)" in result.output
    assert "schema adherence" in result.output and "evidence validity" in result.output


def test_eval_extraction_scores_a_built_data_dir_against_labels(tmp_path: Path) -> None:
    """`eval extraction --labels L --data-dir D` prints issue 20's measures for what D holds (here two
    conversations through segment, the offline extractor and concepts): a labelled concept named in the prose is
    found, the JSON carries the same figures, and nothing is written."""
    from concept_support import conversation, open_dbs, write_archive
    from stage_support import stage_concepts, stage_extract, stage_segment

    data_dir = tmp_path / "data"
    dbs = open_dbs(data_dir)
    chats = [
        conversation(
            "glue",
            [
                ("user", "How do I schedule AWS Glue jobs with job bookmarks? My AWS Glue crawler is slow."),
                ("assistant", "AWS Glue job bookmarks track processed data; schedule AWS Glue jobs with triggers."),
            ],
        ),
        conversation(
            "cake",
            [
                ("user", "I'm baking a sourdough loaf for my mother's birthday. How long should the sourdough proof?"),
                ("assistant", "A sourdough loaf needs a long cold proof; feed the sourdough starter the day before."),
            ],
        ),
    ]
    write_archive(dbs.archive, chats)
    run_id = dbs.run_id()
    for stage in (stage_segment, stage_extract, stage_concepts):
        stage.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings)
    dbs.archive.close()
    dbs.staging.close()
    labels = tmp_path / "labels.json"
    labels.write_text(
        json.dumps(
            {
                "conversations": {
                    "glue": {"topic_group": "aws", "concepts": [{"name": "AWS Glue", "aliases": ["Glue"]}]},
                    "cake": {"topic_group": "baking", "concepts": [{"name": "sourdough", "aliases": []}]},
                },
                "generic_never": ["data", "job"],
            }
        ),
        encoding="utf-8",
    )
    before = {name: (data_dir / name).read_bytes() for name in ("archive.db", "staging.db")}
    result = invoke("eval", "extraction", "--labels", str(labels), "--data-dir", str(data_dir))
    assert result.exit_code == 0, result.output
    assert "2 of 2 labelled conversations present" in result.output
    assert "precision_at_5" in result.output and "target >= 0.80" in result.output
    report = json.loads(
        invoke("eval", "extraction", "--labels", str(labels), "--data-dir", str(data_dir), "--json").stdout
    )
    glue = next(row for row in report["per_conversation"] if row["conversation_id"] == "glue")
    assert glue["recall"] == 1.0 and "AWS Glue" in glue["top"]
    assert report["conversations_scored"] == 2 and report["generic_share_top30"] == 0.0
    assert {name: (data_dir / name).read_bytes() for name in ("archive.db", "staging.db")} == before


def test_eval_extraction_wants_a_model_or_labels(tmp_path: Path) -> None:
    """Neither --model nor --labels: a usage error (exit 2); labels for a data dir never built: exit 1 and why."""
    assert invoke("eval", "extraction").exit_code == 2
    labels = tmp_path / "labels.json"
    labels.write_text(json.dumps({"conversations": {}}), encoding="utf-8")
    missing = CliRunner().invoke(
        cli, ["eval", "extraction", "--labels", str(labels), "--data-dir", str(tmp_path / "x")]
    )
    assert missing.exit_code == 1 and "build the data dir first" in missing.output


def test_eval_with_no_reply_at_all_is_an_error_naming_the_endpoint(
    data_dir: Path, jsonl_export: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing listens at the endpoint: the report still prints, but the command exits 1 saying no reply came,
    instead of a success whose figures (determinism 1.000 of nothing) measure nothing."""
    import socket

    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    base_url = f"http://127.0.0.1:{port}/v1"
    monkeypatch.setenv("CHATMEM_EXTRACT__LLM__MODEL", "m")  # the configured endpoint's retries: none, to be quick
    monkeypatch.setenv("CHATMEM_EXTRACT__LLM__MAX_RETRIES", "0")
    argv = ["--data-dir", str(data_dir), "eval", "extraction", "--model", "m", "--base-url", base_url]
    result = CliRunner().invoke(cli, [*argv, "--export", str(jsonl_export), "--repeat", "1", "--segments", "1"])
    assert result.exit_code == 1, result.output
    assert f"no reply from {base_url} (1 " in result.output and "0 replies" in result.output
