"""The incremental garden (garden/incremental.py, garden/facts_delta.py) on real SQLite files: after each of several
rounds of random changes (evidence written and retired, concepts merged, re-weighted, renamed, created and deleted,
dangling evidence, conversations continued by a new dump, a source's newest message a year later or edited back,
a message's role rewritten, fact mentions added, re-extracted and re-segmented away), the garden's tables equal
those a from-scratch garden leaves on a copy of the same staging.db, row for row."""

from __future__ import annotations

import random
import sqlite3
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from concept_support import Dbs, conversation, open_dbs, write_archive
from stage_support import garden_stage

from garden import incremental
from staging.concepts import ConceptRow, copy_evidence, upsert_concepts
from staging.ledger import open_run, open_staging

NOW = "2025-01-01T00:00:00+00:00"
GARDEN_TABLES = ("concepts", "concept_evidence", "concept_relations", "concept_transitions", "facts", "garden_changes")
STATE_TABLES = (
    *("garden_concepts", "garden_last", "garden_counts", "garden_kept", "garden_dirty", "garden_fact_dirty"),
    *("garden_names", "garden_name_map"),
)
SUBJECTS = ["user", "sam"]
ATTRIBUTES = ["lives in", "likes", "works at"]
VALUES = ["Paris", "Berlin", "K001", "K002", "k003", "Tea", "Acme", "Kale"]
TEXTS = ["we talked about {0}", "more on {0} and its plan", "a note on {0}", "what about {0} later", "{0} again"]


def texts(cid: str, n: int) -> list[tuple[str, str]]:
    return [("user" if i % 2 == 0 else "assistant", TEXTS[i % len(TEXTS)].format(f"{cid} topic {i}")) for i in range(n)]


class World:
    """An archive and a concept store changed at random, seeded."""

    def __init__(self, dbs: Dbs, seed: int, concepts: int = 40) -> None:
        self.dbs, self.rng = dbs, random.Random(seed)
        self.starts: dict[str, datetime] = {}
        self.lengths: dict[str, int] = {}
        self.dumps = 0
        self.concepts = 0
        for tag, year, first in (("old", 2021, 0), ("mid", 2022, 8), ("new", 2024, 16)):
            batch = []
            for c in range(first, first + 8):
                cid = f"c{c}"
                self.starts[cid] = datetime.fromisoformat(f"{year}-{1 + c % 12:02d}-{1 + c:02d}T09:00:00+00:00")
                self.lengths[cid] = 4 + c % 3
                batch.append(conversation(cid, texts(cid, self.lengths[cid]), self.starts[cid]))
            write_archive(dbs.archive, batch, tag=tag)
        for _ in range(concepts):
            self.new_concept()
        for _ in range(8 if concepts else 0):
            self.relation()
        self.extractions = 0
        for cid in sorted(self.lengths):
            self.segment(cid)
            for _ in range(2 if concepts else 0):
                self.mention(cid)
        self.staging.commit()

    def segment(self, cid: str) -> None:
        """A new current segment of the conversation (the old one retired) with a new, empty extraction."""
        self.extractions += 1
        self.staging.execute(
            "UPDATE segments SET retired_run_id = 'r1' WHERE conversation_id = ? AND retired_run_id IS NULL", (cid,)
        )
        segment = f"s-{cid}-{self.extractions}"
        self.staging.execute(
            "INSERT INTO segments VALUES (?, ?, 0, 'start', 1, 1, 'h', 'm', 'm', NULL, NULL, 'r0', NULL)",
            (segment, cid),
        )
        self.staging.execute("INSERT INTO segment_extractions VALUES (?, ?, 'r0')", (segment, f"x{self.extractions}"))

    def _next_mention(self, cid: str) -> tuple[str, str, int]:
        """The conversation's current segment, its extraction and the next mention ordinal there."""
        segment, key = self.staging.execute(
            "SELECT s.segment_id, e.cache_key FROM segments s JOIN segment_extractions e USING (segment_id)"
            " WHERE s.conversation_id = ? AND s.retired_run_id IS NULL",
            (cid,),
        ).fetchone()
        ordinal = self.staging.execute(
            "SELECT COALESCE(MAX(ordinal) + 1, 0) FROM fact_mentions WHERE cache_key = ?", (key,)
        ).fetchone()[0]
        return segment, key, ordinal

    def mention(self, cid: str) -> None:
        """One more fact stated in the conversation's current extraction."""
        segment, key, ordinal = self._next_mention(cid)
        message = self.rng.choice([m[0] for m in self.messages() if m[1] == cid])
        value = self.rng.choice(VALUES)
        self.staging.execute(
            "INSERT INTO fact_mentions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0.8, 'r0')",
            (key, ordinal, segment, message, self.rng.choice(SUBJECTS), self.rng.choice(ATTRIBUTES), value,
             "negative" if self.rng.random() < 0.15 else "positive", f"said {value}"),
        )  # fmt: skip

    def say(self, cid: str, subject: str, attribute: str, value: str) -> None:
        """A statement of exactly this fact in the conversation's current extraction."""
        segment, key, ordinal = self._next_mention(cid)
        self.staging.execute(
            "INSERT INTO fact_mentions VALUES (?, ?, ?, ?, ?, ?, ?, 'positive', 'said', 0.8, 'r0')",
            (key, ordinal, segment, f"{cid}-m0", subject, attribute, value),
        )

    def reextract(self, cid: str) -> None:
        """The conversation's current segment gets another extraction: some statements kept, one more."""
        segment, key = self.staging.execute(
            "SELECT s.segment_id, e.cache_key FROM segments s JOIN segment_extractions e USING (segment_id)"
            " WHERE s.conversation_id = ? AND s.retired_run_id IS NULL",
            (cid,),
        ).fetchone()
        self.extractions += 1
        new = f"x{self.extractions}"
        kept = [
            r
            for r in self.staging.execute("SELECT * FROM fact_mentions WHERE cache_key = ?", (key,))
            if self.rng.random() < 0.6
        ]
        self.staging.executemany(
            "INSERT INTO fact_mentions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(new, i, *row[2:]) for i, row in enumerate(kept)],
        )
        self.staging.execute("UPDATE segment_extractions SET cache_key = ? WHERE segment_id = ?", (new, segment))
        self.mention(cid)

    @property
    def staging(self) -> sqlite3.Connection:
        return self.dbs.staging

    def messages(self) -> list[tuple[str, str, str | None]]:
        return [tuple(r) for r in self.dbs.archive.execute("SELECT uuid, conversation_id, created_at FROM messages")]

    def live(self) -> list[str]:
        return [str(r[0]) for r in self.staging.execute("SELECT concept_id FROM concepts WHERE state != 'merged'")]

    def new_concept(self) -> None:
        cid = f"k{self.concepts:03d}"
        self.concepts += 1
        state = self.rng.choice(["active", "active", "weak", "archived"])
        confidence = self.rng.choice([0.3, 0.6, 0.9])
        row = ConceptRow(cid, cid.title(), cid, "project", "", state, confidence, [], 0, self.rng.randint(1, 5),
                         None, None, None, ["llm"], "r0", "r0", True)  # fmt: skip
        upsert_concepts(self.staging, [row])
        for _ in range(self.rng.randint(1, 5)):
            self.evidence(cid)

    def evidence(self, cid: str, conversation_id: str | None = None, key: str | None = None) -> None:
        pool = [m for m in self.messages() if conversation_id is None or m[1] == conversation_id]
        uuid, _, created_at = self.rng.choice(pool)
        when = None if self.rng.random() < 0.1 and key is None else created_at
        self.staging.execute(
            "INSERT OR IGNORE INTO concept_evidence (concept_id, message_id, text_key, text, confidence, segment_id,"
            " created_at, hypothesis_type, extractor, run_id)"
            " VALUES (?, ?, ?, 't', 0.7, 's', ?, 'project', 'llm', 'r0')",
            (cid, uuid, key or f"key{self.rng.randint(0, 3)}", when),
        )

    def relation(self) -> None:
        ids = self.live()
        source, target = self.rng.sample(ids, 2)
        self.staging.execute(
            "INSERT OR IGNORE INTO concept_relations VALUES (?, ?, ?, ?, 'r0')",
            (source, self.rng.choice(["causes", "supports"]), target, self.rng.choice([0.4, 0.8])),
        )

    def change(self) -> list[str]:
        """A few random changes of every kind the garden reads; what was done."""
        rng, done = self.rng, []
        for _ in range(rng.randint(3, 8)):
            kind = rng.choice(
                ["evidence", "evidence", "retire", "merge", "reweigh", "concept", "delete", "dangling",
                 "focus", "continue", "jump", "edit_back", "relation", "fact", "fact", "reextract", "resegment",
                 "rename", "voice"]
            )  # fmt: skip
            done.append(kind)
            ids = self.live()
            if kind == "evidence":
                for _ in range(rng.randint(1, 6)):
                    self.evidence(rng.choice(ids))
            elif kind == "retire":
                rows = self.staging.execute("SELECT rowid FROM concept_evidence").fetchall()
                for (rowid,) in rng.sample(rows, min(len(rows), rng.randint(1, 6))):
                    self.staging.execute("DELETE FROM concept_evidence WHERE rowid = ?", (rowid,))
            elif kind == "merge":  # as the concepts loop does: evidence copied, the loser points at the survivor
                loser, winner = rng.sample(ids, 2)
                copy_evidence(self.staging, loser, winner, "r1")
                self.staging.execute(
                    "UPDATE concepts SET state = 'merged', merged_into = ? WHERE concept_id = ?", (winner, loser)
                )
            elif kind == "reweigh":
                self.staging.execute(
                    "UPDATE concepts SET confidence = ?, evidence_count = ? WHERE concept_id = ?",
                    (rng.choice([0.3, 0.6, 0.9]), rng.randint(1, 5), rng.choice(ids)),
                )
            elif kind == "concept":
                self.new_concept()
            elif kind == "delete":
                self.staging.execute("DELETE FROM concepts WHERE concept_id = ?", (rng.choice(ids),))
            elif kind == "dangling":
                self.evidence(f"ghost{rng.randint(0, 99)}")
            elif kind == "focus":  # one concept takes over a conversation: its kept concepts change
                target = rng.choice(sorted(self.lengths))
                cid = rng.choice(ids)
                for _ in range(4):
                    self.evidence(cid, target)
            elif kind == "continue":  # a new dump continues old conversations (a new source)
                self.dumps += 1
                chosen = rng.sample(sorted(self.lengths), 2)
                batch = []
                for cid in chosen:
                    self.lengths[cid] += 2
                    batch.append(conversation(cid, texts(cid, self.lengths[cid]), self.starts[cid]))
                write_archive(self.dbs.archive, batch, tag=f"dump{self.dumps}")
                for cid in chosen:  # new evidence on the new messages
                    self.evidence(rng.choice(ids), cid)
            elif kind in ("jump", "edit_back"):
                source = rng.choice([r[0] for r in self.dbs.archive.execute("SELECT id FROM sources")])
                row = self.dbs.archive.execute(
                    "SELECT uuid, created_at FROM messages WHERE source_id = ? ORDER BY created_at DESC LIMIT 1",
                    (source,),
                ).fetchone()
                if row is None:
                    continue
                shift = timedelta(days=366) if kind == "jump" else timedelta(days=-400)
                moved = (datetime.fromisoformat(row[1]) + shift).isoformat()
                self.dbs.archive.execute("UPDATE messages SET created_at = ? WHERE uuid = ?", (moved, row[0]))
            elif kind == "voice":  # a message rewritten in place with the other role: who said its concepts
                uuid = rng.choice(self.messages())[0]
                self.dbs.archive.execute(
                    "UPDATE messages SET role = CASE role WHEN 'user' THEN 'assistant' ELSE 'user' END WHERE uuid = ?",
                    (uuid,),
                )
            elif kind == "relation":
                self.relation()
            elif kind == "fact":
                self.mention(rng.choice(sorted(self.lengths)))
            elif kind == "reextract":
                self.reextract(rng.choice(sorted(self.lengths)))
            elif kind == "resegment":  # a conversation cut again: its old statements are no longer current
                cid = rng.choice(sorted(self.lengths))
                self.segment(cid)
                self.mention(cid)
            elif kind == "rename":  # a concept takes a fact's value as an alias: the fact's link may move
                value = rng.choice(VALUES)
                self.staging.execute(
                    "UPDATE concepts SET aliases = ? WHERE concept_id = ?",
                    (f'["{rng.choice([value, value.lower(), value.upper()])}"]', rng.choice(ids)),
                )
        self.dbs.archive.commit()
        self.staging.commit()
        return done


def snapshot(conn: sqlite3.Connection, tables: tuple[str, ...]) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of each table, run ids left out, sorted."""
    out: dict[str, list[tuple[Any, ...]]] = {}
    for table in tables:
        columns = [str(r[1]) for r in conn.execute(f"PRAGMA table_info({table})")]
        kept = ", ".join(c for c in columns if c not in ("run_id", "created_run_id"))
        out[table] = sorted((tuple(r) for r in conn.execute(f"SELECT {kept} FROM {table}")), key=repr)
    return out


def sources(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in conn.execute("SELECT source_id, newest FROM garden_sources ORDER BY 1")]


def garden(dbs: Dbs, staging: sqlite3.Connection) -> dict[str, Any]:
    run_id = open_run(staging, stages=["garden"], exports=[], settings={}, code_version="t")
    return dict(garden_stage.run(dbs.archive, staging, run_id=run_id, settings=dbs.settings, now=NOW).counts)


def from_scratch(dbs: Dbs, tmp_path: Path, name: str) -> sqlite3.Connection:
    """A copy of staging.db as it is now, its garden state dropped: its next garden takes the full path."""
    path = tmp_path / name / "staging.db"
    path.parent.mkdir()
    with sqlite3.connect(path) as target:
        dbs.staging.backup(target)
    copy = open_staging(path)
    copy.execute("DELETE FROM garden_meta")
    copy.commit()
    return copy


def assert_same(dbs: Dbs, full: sqlite3.Connection, note: str) -> None:
    assert snapshot(dbs.staging, GARDEN_TABLES) == snapshot(full, GARDEN_TABLES), note
    assert snapshot(dbs.staging, STATE_TABLES) == snapshot(full, STATE_TABLES), note
    assert sources(dbs.staging) == sources(full), note


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_incremental_gardens_equal_a_full_garden_after_every_round_of_random_changes(tmp_path: Path, seed: int) -> None:
    """Eight rounds of random changes; after each, the incremental garden (most rounds) leaves the concept store,
    its transitions, facts, garden_changes and the kept state equal to a full garden's on a copy."""
    dbs = open_dbs(tmp_path / "data")
    world = World(dbs, seed)
    first = garden(dbs, dbs.staging)
    assert first["incremental"] == 0  # no state yet: the full path builds it
    paths = []
    for round_ in range(8):
        done = world.change()
        full = from_scratch(dbs, tmp_path, f"full{round_}")
        counts = garden(dbs, dbs.staging)
        whole = garden(dbs, full)
        assert whole["incremental"] == 0
        paths.append(counts["incremental"])
        for key in ("statements", "facts", "facts_valid", "facts_superseded", "facts_restated", "concepts_archived"):
            assert counts[key] == whole[key], (round_, key)
        assert_same(dbs, full, f"round {round_}: {done}")
        full.close()
    assert sum(paths) >= 6, paths  # the rounds change a few things each: most stay incremental
    transitions = dbs.staging.execute("SELECT COUNT(*) FROM concept_transitions").fetchone()[0]
    assert transitions > 0  # the rounds did move concepts in and out of the archive
    kinds = {r[0] for r in dbs.staging.execute("SELECT DISTINCT kind FROM garden_changes")}
    assert {"concept_state", "fact_recorded", "fact_retracted", "fact_superseded", "fact_support"} <= kinds


def test_a_year_later_in_one_source_ages_its_concepts_found_by_the_index(tmp_path: Path) -> None:
    """A source's newest message a year later archives its weak concepts not kept by a conversation, in an
    incremental run that judged only the concepts the move aged; the full garden agrees."""
    dbs = open_dbs(tmp_path / "data", garden={"keep_per_conversation": 0})
    world = World(dbs, 7)
    garden(dbs, dbs.staging)
    newest = dbs.archive.execute(
        "SELECT uuid, created_at FROM messages WHERE source_id = 1 ORDER BY created_at DESC LIMIT 1"
    ).fetchone()
    later = (datetime.fromisoformat(newest[1]) + timedelta(days=366)).isoformat()
    dbs.archive.execute("UPDATE messages SET created_at = ? WHERE uuid = ?", (later, newest[0]))
    dbs.archive.commit()
    full = from_scratch(dbs, tmp_path, "full")
    counts = garden(dbs, dbs.staging)
    garden(dbs, full)
    assert counts["incremental"] == 1 and counts["incremental_sources_moved"] == 1
    assert counts["incremental_concepts_aged"] > 0 and counts["concepts_archived"] > 0
    assert counts["incremental_concepts_aged"] < len(world.live())  # by the index, not every concept
    assert_same(dbs, full, "a year later")


def test_a_concept_a_conversation_no_longer_keeps_is_judged_again_though_its_evidence_did_not_move(
    tmp_path: Path,
) -> None:
    """A weak, stale concept kept only as its old conversation's best is archived once another concept takes the
    conversation over (found through the kept sets, not its own evidence), and comes back when that one goes."""
    dbs = open_dbs(tmp_path / "data", garden={"keep_per_conversation": 1})
    world = World(dbs, 11, concepts=0)
    weak = ConceptRow("old-topic", "Old topic", "old topic", "project", "", "weak", 0.3, [], 0, 1,
                      None, None, None, ["llm"], "r0", "r0", True)  # fmt: skip
    upsert_concepts(dbs.staging, [weak, ConceptRow("newcomer", "Newcomer", "newcomer", "project", "", "active", 0.9,
                                                   [], 0, 5, None, None, None, ["llm"], "r0", "r0", True)])  # fmt: skip
    for key in ("a", "b"):
        world.evidence("old-topic", "c0", key)
    world.evidence("newcomer", "c7", "a")  # fresh in the old source: never stale
    dbs.staging.commit()
    garden(dbs, dbs.staging)
    assert dbs.staging.execute("SELECT state FROM concepts WHERE concept_id = 'old-topic'").fetchone()[0] == "weak"
    for key in ("b", "c", "d"):
        world.evidence("newcomer", "c0", key)
    dbs.staging.commit()
    full = from_scratch(dbs, tmp_path, "full")
    counts = garden(dbs, dbs.staging)
    garden(dbs, full)
    assert counts["incremental"] == 1 and counts["incremental_concepts_rekept"] == 2
    assert dbs.staging.execute("SELECT state FROM concepts WHERE concept_id = 'old-topic'").fetchone()[0] == "archived"
    assert_same(dbs, full, "taken over")
    dbs.staging.execute("DELETE FROM concepts WHERE concept_id = 'newcomer'")
    dbs.staging.commit()
    full = from_scratch(dbs, tmp_path, "full2")
    assert garden(dbs, dbs.staging)["incremental"] == 1
    garden(dbs, full)
    assert dbs.staging.execute("SELECT state FROM concepts WHERE concept_id = 'old-topic'").fetchone()[0] == "weak"
    assert_same(dbs, full, "newcomer gone")


def test_a_message_the_user_no_longer_wrote_lets_its_old_concept_fade_in_an_incremental_run(tmp_path: Path) -> None:
    """A weak concept of an old conversation said only in one user message stays (keep_said_by_user); the message
    rewritten in place as a reply (its conversation logged as changed, no evidence row moved) makes it stale in
    the next incremental run, and back again; the full garden agrees each time."""
    dbs = open_dbs(tmp_path / "data", garden={"keep_per_conversation": 0})
    World(dbs, 5, concepts=0)
    row = ConceptRow("said-once", "Said once", "said once", "project", "", "weak", 0.3, [], 0, 1,
                     None, None, None, ["llm"], "r0", "r0", True)  # fmt: skip
    upsert_concepts(dbs.staging, [row])
    [(created_at,)] = dbs.archive.execute("SELECT created_at FROM messages WHERE uuid = 'c0-m0'").fetchall()
    dbs.staging.execute(
        "INSERT INTO concept_evidence (concept_id, message_id, text_key, text, confidence, segment_id, created_at,"
        " hypothesis_type, extractor, run_id) VALUES ('said-once', 'c0-m0', 'k', 't', 0.7, 's', ?, 'project',"
        " 'llm', 'r0')",
        (created_at,),
    )
    dbs.staging.commit()
    garden(dbs, dbs.staging)

    def state() -> str:
        return str(dbs.staging.execute("SELECT state FROM concepts WHERE concept_id = 'said-once'").fetchone()[0])

    assert state() == "weak"
    for role, expected in (("assistant", "archived"), ("user", "weak")):
        dbs.archive.execute("UPDATE messages SET role = ? WHERE uuid = 'c0-m0'", (role,))
        dbs.archive.commit()
        full = from_scratch(dbs, tmp_path, f"full-{role}")
        counts = garden(dbs, dbs.staging)
        garden(dbs, full)
        assert counts["incremental"] == 1 and counts["incremental_concepts_voiced"] >= 1
        assert state() == expected
        assert_same(dbs, full, f"c0-m0 by {role}")
        full.close()


def concept(concept_id: str, title: str, aliases: list[str] | None = None) -> ConceptRow:
    return ConceptRow(concept_id, title, title.casefold(), "project", "", "active", 0.9, aliases or [], 0, 5,
                      None, None, None, ["llm"], "r0", "r0", True)  # fmt: skip


def test_fact_links_follow_a_competing_name_and_a_merge_chain_in_an_incremental_run(tmp_path: Path) -> None:
    """A new concept whose alias folds like an older concept's title takes the facts' link (the later first
    appearance wins, as in a full garden); a merge at the end of a chain moves the links of every concept merged
    into it, though only the last one changed."""
    dbs = open_dbs(tmp_path / "data")
    world = World(dbs, 13, concepts=0)
    upsert_concepts(dbs.staging, [concept("alpha", "Alpha"), concept("beta", "Beta"), concept("gamma", "Gamma")])
    world.say("c0", "user", "likes", "Alpha")
    world.say("c1", "user", "works at", "Beta")
    dbs.staging.commit()
    garden(dbs, dbs.staging)

    def link(value: str) -> str:
        row = dbs.staging.execute("SELECT value_concept_id FROM facts WHERE value = ?", (value,)).fetchone()
        return str(row[0])

    assert (link("Alpha"), link("Beta")) == ("alpha", "beta")
    upsert_concepts(dbs.staging, [concept("zeta", "Zeta", ["ALPHA"])])
    dbs.staging.execute("UPDATE concepts SET state = 'merged', merged_into = 'gamma' WHERE concept_id = 'beta'")
    dbs.staging.commit()
    full = from_scratch(dbs, tmp_path, "full1")
    assert garden(dbs, dbs.staging)["incremental"] == 1
    garden(dbs, full)
    assert (link("Alpha"), link("Beta")) == ("zeta", "gamma")
    assert_same(dbs, full, "a competing name, a merge")
    dbs.staging.execute("UPDATE concepts SET state = 'merged', merged_into = 'alpha' WHERE concept_id = 'gamma'")
    dbs.staging.commit()
    full = from_scratch(dbs, tmp_path, "full2")
    assert garden(dbs, dbs.staging)["incremental"] == 1
    garden(dbs, full)
    assert link("Beta") == "alpha"  # beta -> gamma -> alpha: beta's row did not change
    assert_same(dbs, full, "a merge chain")
    names = sorted(tuple(r) for r in dbs.staging.execute("SELECT * FROM garden_name_map"))
    assert names == sorted(tuple(r) for r in full.execute("SELECT * FROM garden_name_map"))


def test_a_garden_killed_before_it_commits_leaves_the_last_state_and_its_rerun_equals_a_full_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure after the state was brought forward and the plan written, before the commit: nothing of it stays
    (one transaction); the re-run is incremental and equal to a full garden."""
    dbs = open_dbs(tmp_path / "data")
    world = World(dbs, 5)
    garden(dbs, dbs.staging)
    for cid in world.live()[:3]:
        world.evidence(cid)
    world.staging.execute("DELETE FROM concept_evidence WHERE rowid IN (SELECT rowid FROM concept_evidence LIMIT 2)")
    world.staging.commit()
    before = snapshot(dbs.staging, GARDEN_TABLES + STATE_TABLES + ("garden_meta", "garden_places", "garden_sources"))

    def killed(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt("killed")

    monkeypatch.setattr(incremental, "finish", killed)
    with pytest.raises(BaseException, match="killed"):
        garden(dbs, dbs.staging)
    monkeypatch.undo()
    after = snapshot(dbs.staging, GARDEN_TABLES + STATE_TABLES + ("garden_meta", "garden_places", "garden_sources"))
    assert after == before
    full = from_scratch(dbs, tmp_path, "full")
    assert garden(dbs, dbs.staging)["incremental"] == 1
    garden(dbs, full)
    assert_same(dbs, full, "after the kill")


def test_other_settings_a_lost_state_or_much_changed_take_the_full_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """New garden settings, a state of another version, or over a quarter of the concepts changed: the full path
    (it rebuilds the state), then runs are incremental again."""
    dbs = open_dbs(tmp_path / "data")
    world = World(dbs, 9)
    assert garden(dbs, dbs.staging)["incremental"] == 0
    assert garden(dbs, dbs.staging)["incremental"] == 1
    dbs.settings = dbs.settings.model_copy(
        update={"garden": dbs.settings.garden.model_copy(update={"keep_per_conversation": 1})}
    )
    assert garden(dbs, dbs.staging)["incremental"] == 0
    assert garden(dbs, dbs.staging)["incremental"] == 1
    dbs.staging.execute("UPDATE garden_meta SET value = json_set(value, '$.version', 0)")
    dbs.staging.commit()
    assert garden(dbs, dbs.staging)["incremental"] == 0
    monkeypatch.setattr(incremental, "FULL_MIN", 0)
    for cid in world.live()[:5]:
        world.evidence(cid)
    dbs.staging.commit()
    assert garden(dbs, dbs.staging)["incremental"] == 1
    for cid in world.live()[:15]:
        world.evidence(cid, key="new")
    dbs.staging.commit()
    assert garden(dbs, dbs.staging)["incremental"] == 0
    assert garden(dbs, dbs.staging)["incremental"] == 1
