"""Which model embeds the keys: the full MiniLM where the archive is small enough to afford it, else the static one.

    counter = KeyCost(settings.memory)       # the cues stage, pass 1: every message
    counter.add(role, text)
    choice = counter.choice()                # recorded in the cues run (memory_runs summary, stage notes)
    settings = for_run(settings, staging, run_id)   # the recall side: queries use the model the keys were built with

The full model reads a short user turn in ~17 CPU-ms, the static one in well under 1: at LoCoMo's size (788 turns)
that is ~17 CPU-s and lifts evidence_recall@10 from 0.797 to 0.856; at LongMemEval_S's (23k user turns per 100
questions) it is ~6.5 CPU-min, over that file's 20-minute budget. So `memory.key_embedder = "auto"` estimates the
full model's cost on this archive's key-role messages (keys x ms per key + word pieces x ms per piece, counted by
the tokenizer alone, no model loaded) and takes it when the estimate fits `memory.full_key_budget_s`. Counting
stops once the budget is passed: a large archive pays for tokenizing only what fits the budget.

The choice belongs to a cues run: a re-run on a grown archive may choose the other model, and then every key is
embedded again by that one (vectors are cached by text and model, so nothing is embedded twice). A recall reads
the run's choice, so query and keys always come from one model; vectors of two models are never compared.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from clients.embedders import word_piece_counts

if TYPE_CHECKING:
    from contracts.settings import MemorySettings, Settings

FULL = "minilm-onnx"
STATIC = "embed"
CHUNK = 1_000  # texts tokenized at once


@dataclass(frozen=True)
class KeyChoice:
    model: str  # FULL or STATIC: what memory.key_embedder resolves to for this run
    setting: str  # memory.key_embedder as configured ("auto", or the model it names)
    keys: int  # key-role messages counted
    estimate_s: float  # the full model's estimated CPU seconds for them (counting stops past the budget)
    budget_s: float
    complete: bool  # every key was counted (False: the budget was passed before the end)

    def summary(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "setting": self.setting,
            "keys_counted": self.keys,
            "full_estimate_s": round(self.estimate_s, 1),
            "full_budget_s": self.budget_s,
            "complete": self.complete,
        }

    def note(self) -> str:
        if self.setting != "auto":
            return f"keys: memory.key_embedder = {self.setting} (set, not chosen)"
        if self.model == FULL:
            return (
                f"keys: the full model (estimate for {self.keys:,} key(s): {self.estimate_s:.0f} CPU-s, within"
                f" memory.full_key_budget_s = {self.budget_s:g})"
            )
        return (
            f"keys: the static model (the full model's estimate passed memory.full_key_budget_s = {self.budget_s:g}"
            f" after {self.keys:,} key(s))"
        )


class KeyCost:
    """The full model's estimated cost over the key-role messages, fed one message at a time."""

    def __init__(self, settings: MemorySettings) -> None:
        self.settings = settings
        self.roles = set(settings.key_roles)
        self.counting = settings.key_embedder == "auto"
        self.keys = 0
        self.estimate_ms = 0.0
        self.over = False
        self._pending: list[str] = []

    def add(self, role: str, text: str) -> None:
        if not self.counting or self.over or role not in self.roles:
            return
        self._pending.append(text)
        if len(self._pending) >= CHUNK:
            self._flush()

    def _flush(self) -> None:
        pieces = word_piece_counts(self._pending, self.settings.key_max_tokens)
        self.keys += len(pieces)
        self.estimate_ms += len(pieces) * self.settings.full_key_ms_per_key
        self.estimate_ms += sum(pieces) * self.settings.full_key_ms_per_piece
        self._pending = []
        self.over = self.estimate_ms > 1000 * self.settings.full_key_budget_s

    def choice(self) -> KeyChoice:
        if self.counting and self._pending:
            self._flush()
        setting = self.settings.key_embedder
        never = self.settings.full_key_budget_s <= 0  # a budget of 0 means never, even with nothing to embed
        model = (STATIC if self.over or never else FULL) if setting == "auto" else setting
        budget = self.settings.full_key_budget_s
        return KeyChoice(model, setting, self.keys, self.estimate_ms / 1000, budget, not self.over)


def with_model(settings: Settings, model: str) -> Settings:
    """`settings` with memory.key_embedder set to a model (FULL or STATIC), for everything that reads keys."""
    return settings.model_copy(update={"memory": settings.memory.model_copy(update={"key_embedder": model})})


def run_choice(staging: sqlite3.Connection, run_id: str) -> dict[str, Any]:
    """What a cues run recorded of its key model (KeyChoice.summary); {} for a run from before it was recorded."""
    row = staging.execute("SELECT summary FROM memory_runs WHERE run_id = ?", (run_id,)).fetchone()
    summary = json.loads(row[0]) if row is not None else {}
    found = summary.get("key_model")
    return dict(found) if isinstance(found, dict) else {}


def run_model(staging: sqlite3.Connection, run_id: str) -> str:
    """The model a cues run embedded its keys with; STATIC for a run from before the choice was recorded (the
    default then)."""
    model = run_choice(staging, run_id).get("model")
    return model if model in (FULL, STATIC) else STATIC


def for_run(settings: Settings, staging: sqlite3.Connection, run_id: str) -> Settings:
    """The settings a recall of this cues run reads its keys and embeds its queries with: `auto` becomes the
    run's recorded model; a model named in the settings is kept (the keys it lacks are embedded at load)."""
    if settings.memory.key_embedder != "auto":
        return settings
    return with_model(settings, run_model(staging, run_id))
