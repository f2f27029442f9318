"""Session 37's cold try, the CLI's usage answers: a usage error exits 2; chatmem's own options given after a
command say where they go; a misspelt command gets a suggestion; `concepts --type T` that matches nothing among
existing concepts names the types there are, instead of "run first"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from flows.cli import cli


def chatmem(*args: str | Path) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args], prog_name="chatmem")


def test_garden_without_dry_run_is_a_usage_error(tmp_path: Path) -> None:
    result = chatmem("--data-dir", tmp_path / "d", "garden")
    assert result.exit_code == 2 and "error: chatmem garden only previews (--dry-run)" in result.output


@pytest.mark.parametrize(
    ("args", "example"),
    [
        (["run", "mixed.jsonl", "--data-dir", "D"], "`chatmem --data-dir DIR run ...`"),
        (["run", "x.jsonl", "--data-dir=D"], "`chatmem --data-dir DIR run ...`"),
        (["staging", "runs", "--verbose"], "`chatmem --verbose staging runs ...`"),
        (["concepts", "-q"], "`chatmem -q concepts ...`"),
    ],
)
def test_a_global_option_after_the_command_says_it_goes_before(args: list[str], example: str) -> None:
    result = chatmem(*args)
    assert result.exit_code == 2, result.output
    assert "is an option of chatmem itself: give it before the command" in result.output and example in result.output


def test_an_unknown_option_that_is_not_global_keeps_click_s_suggestion() -> None:
    result = chatmem("run", "x.jsonl", "--forse")
    assert result.exit_code == 2 and "'--force'" in result.output and "option of chatmem itself" not in result.output


@pytest.mark.parametrize(("typed", "meant"), [("recal", "recall"), ("stagin", "staging"), ("concept", "concepts")])
def test_a_misspelt_command_gets_the_closest_names(typed: str, meant: str) -> None:
    result = chatmem(typed, "lisbon")
    assert result.exit_code == 2 and f"No such command '{typed}'. Did you mean '{meant}'" in result.output


def test_concepts_of_a_type_none_has_names_the_types_there_are(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    export = tmp_path / "trip.jsonl"
    texts = ["I use Obsidian every day for my notes about Lisbon.", "Obsidian and Lisbon, noted."] * 3
    export.write_text(
        "".join(
            json.dumps(
                {"conversation_id": f"c{i // 2}", "id": f"m{i}", "role": ("user", "assistant")[i % 2], "text": t}
            )
            + "\n"
            for i, t in enumerate(texts)
        ),
        encoding="utf-8",
    )
    before = chatmem("--data-dir", data_dir, "concepts", "--type", "tension")
    assert before.exit_code != 0 or "run `chatmem run EXPORT` first" in before.output  # nothing there yet
    ran = chatmem("--data-dir", data_dir, "run", export, "--to", "concepts")
    assert ran.exit_code == 0, ran.output
    listed = chatmem("--data-dir", data_dir, "concepts", "--json")
    types = {c["type"] for c in json.loads(listed.output)}
    assert types and "tension" not in types
    result = chatmem("--data-dir", data_dir, "concepts", "--type", "tension")
    assert result.exit_code == 0 and "run `chatmem run EXPORT` first" not in result.output
    assert "no concept matches --type tension; there are" in result.output
    assert all(kind in result.output for kind in types)


def test_a_long_message_repeating_a_sentence_cites_it_once_not_also_a_piece_of_it() -> None:
    """The cold try's 5 MB message (one sentence repeated): each concept cited the sentence and, from where reading
    stops (READ_USER_CHARS), the same sentence cut short: one message twice, one span inside the other."""
    from concept_support import segment_input

    from extract.offline import OfflineExtractor

    sentence = "The quick brown fox jumps over the lazy dog near the river bank. "
    segment = segment_input("seg-big", [("user", sentence * 80_000), ("assistant", "Noted.")])
    hypotheses = OfflineExtractor(6).extract(segment).hypotheses
    assert hypotheses
    for hypothesis in hypotheses:
        texts = [span.text for span in hypothesis.evidence_spans if span.message_id == "m0"]
        nested = [(a, b) for i, a in enumerate(texts) for j, b in enumerate(texts) if i != j and a in b]
        assert texts and not nested, (hypothesis.concept_id, texts)
