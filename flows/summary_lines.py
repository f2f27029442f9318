"""What the text summary of `chatmem run` shows of each stage by default (flows/cli_run_summary.py): the few counts
that say what the stage made, the counts that say something went wrong or cost money when they are not zero, and
every note but the known details. `--verbose` shows every count and note, `--json` holds them all (tests and
benchmarks read them there), and so does `chatmem staging show stage_runs`.

The cold try of session 38 found the demo's summary a 39-line wall (every stage's 10-20 counters, the load's ten
notes on which layer groups it compared whole and how many rows each layer read): a person wants what arrived,
what failed and what to do next. A note this module does not know is shown: a new warning is never hidden.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

# Per stage: the counts always shown, in the stage's own order (a stage not listed here shows all its counts)
HEADLINE: dict[str, tuple[str, ...]] = {
    "ingest": ("files", "files_failed", "conversations_written", "messages_inserted"),
    "segment": ("conversations_segmented", "segments_written"),
    "embed": ("segments_embedded", "texts_embedded"),
    "extract": ("extracted", "hypotheses_kept", "facts_kept"),
    "concepts": ("concepts_active", "concepts_weak", "concepts_total"),
    "garden": ("facts", "facts_superseded", "concepts_archived"),
    "embed_concepts": ("concepts", "texts_embedded"),
    "cluster": ("points", "topics", "outlier_share_pct"),
    "cues": ("cues", "tags", "edges"),
}
# Per stage: the counts shown when they are not zero: something went wrong or was set aside, work an LLM was paid
# for, or the part of the work a later run did (an incremental cluster run's placed segments); the quarantined
# records have a line of their own
WHEN_NOT_ZERO: dict[str, tuple[str, ...]] = {
    "ingest": (
        "files_skipped",
        "files_partial",
        "messages_updated",
        "messages_retired",
        "timestamps_dropped",
    ),
    "segment": ("segments_retired",),
    "extract": (
        "prompt_tokens",
        "completion_tokens",
        "reasoning_tokens",
        "hypotheses_rejected",
        "not_returned",
        "segments_dropped",
        "failed",
    ),
    "concepts": ("rejected",),
    "cluster": ("segments_placed", "llm_label_calls", "llm_labels_failed", "llm_labels_refused"),
}
# Notes that are details of how a stage did its work, not news for the person who ran it: behind --verbose
DETAIL_NOTES = re.compile(
    r"^(model: |topics found by |full run: |full build: |keys: |incremental: |incremental from cues run "
    r"|memory layers: only what |rows read per layer: |topic keywords and labels computed again "
    r"|\d+ hub cue\(s\) |\d+ topic\(s\) joined to one whose |\d+ row\(s\) written \(|0 change\(s\); )"
)
# The load's note on one group of layers it compared whole with the graph (load/archive_delta.py,
# load/staging_delta.py): "Concept: diffed whole (no mark of an earlier finished load of this manifest)"
DIFFED_WHOLE = re.compile(r"^(?P<group>.+?):? diffed whole \((?P<why>.+)\)$")


def shown_counts(stage: str, counts: Mapping[str, int], verbose: bool) -> dict[str, int]:
    """The counts the summary line of `stage` shows: all of them with --verbose or for a stage not listed."""
    if verbose or stage not in HEADLINE:
        return dict(counts)
    always, unless_zero = HEADLINE[stage], WHEN_NOT_ZERO.get(stage, ())
    return {k: v for k, v in counts.items() if k in always or (k in unless_zero and v)}


def shown_notes(notes: Sequence[str], verbose: bool) -> list[str]:
    """The notes the summary shows: all with --verbose; else the details left out and the load's per-group
    "diffed whole" notes folded into one line that keeps their number and their reasons."""
    if verbose:
        return list(notes)
    shown: list[str] = []
    folded: dict[str, int] = {}  # why -> how many groups
    at = -1  # where the folded line goes: where the first of them was
    for note in notes:
        whole = DIFFED_WHOLE.match(note)
        if whole:
            at = len(shown) if at < 0 else at
            folded[whole.group("why")] = folded.get(whole.group("why"), 0) + 1
        elif not DETAIL_NOTES.match(note):
            shown.append(note)
    if folded:
        groups = sum(folded.values())
        whys = "; ".join(f"{n}: {why}" if len(folded) > 1 else why for why, n in folded.items())
        shown.insert(at, f"{groups} group(s) of graph layers diffed whole ({whys})")
    return shown


def hidden(stage: str, counts: Mapping[str, int], notes: Sequence[str]) -> bool:
    """Whether the default summary leaves out any of this stage's counts or notes (folded notes count too)."""
    if len(shown_counts(stage, counts, False)) < len(counts):
        return True
    return shown_notes(notes, False) != list(notes)
