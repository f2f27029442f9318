"""memory/queries.py and memory/timeline.py (the MCP tools' bodies) on real SQLite files, without a server.

The concepts come from the real segment -> extract -> concepts stages with a scripted extractor (tests/
test_concepts.py's helpers), so merges, aliases and evidence are what the concept loop really stores.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from concept_support import T0, Dbs, Msg, conversation, open_dbs, write_archive
from test_concepts import chat, hyp, pipeline

from contracts.mcp import ConceptSearchRequest, ConversationRequest, TimelineRequest, TopicsRequest
from memory.queries import MESSAGE_CHARS, QueryError, get_conversation, search_concepts, topics
from memory.text import estimate_tokens
from memory.timeline import timeline
from staging.facts import upsert_facts


@pytest.fixture
def merged(tmp_path: Path) -> Dbs:
    """'Home remodel' merged into 'Kitchen renovation' (conversation c names it an alias), and a goal."""
    specs = {
        "a": [hyp("Kitchen renovation")],
        "b": [hyp("Home remodel", spans=1)],
        "c": [hyp("Kitchen renovation", aliases=["Home remodel"])],
        "d": [hyp("Marathon training", kind="goal")],
    }
    chats = [chat("a"), chat("b", 1), chat("c", 2), chat("d", 3)]
    dbs, _ = pipeline(tmp_path, chats, specs)
    return dbs


def test_search_ranks_the_named_concept_first_with_its_evidence(merged: Dbs) -> None:
    """A whole-title query puts that concept first; its evidence names real messages and their conversations."""
    found = search_concepts(merged.staging, merged.archive, ConceptSearchRequest(query="kitchen renovation"))
    top = found.concepts[0]
    assert top.title == "Kitchen renovation" and top.state == "active" and top.type == "project"
    assert top.evidence_count == 5 and len(top.evidence) == 5
    assert [e.message_id for e in top.evidence][:2] == ["a-m0", "a-m1"]  # oldest first
    assert {e.conversation_id for e in top.evidence} == {"a", "b", "c"}
    assert all(e.message_id.startswith(f"{e.conversation_id}-m") for e in top.evidence)
    assert top.first_seen == T0 and top.last_seen == T0 + timedelta(days=2, minutes=1)


def test_a_merged_concept_is_found_by_its_alias_and_hidden_unless_asked_for(merged: Dbs) -> None:
    """The merged name is an alias of the survivor; state=null leaves merged rows out, state=merged shows them."""
    by_alias = search_concepts(merged.staging, merged.archive, ConceptSearchRequest(query="home remodel"))
    assert [c.title for c in by_alias.concepts] == ["Kitchen renovation"]
    asked = search_concepts(merged.staging, merged.archive, ConceptSearchRequest(query="remodel", state="merged"))
    assert [(c.title, c.merged_into) for c in asked.concepts] == [("Home remodel", "kitchen-renovation")]


def test_search_filters_by_type_and_limits_evidence(merged: Dbs) -> None:
    """type keeps one kind; evidence_limit caps the listed evidence, not the count; no match is an empty list."""
    goals = search_concepts(
        merged.staging, merged.archive, ConceptSearchRequest(query="training kitchen", type="goal", evidence_limit=1)
    )
    assert [c.title for c in goals.concepts] == ["Marathon training"] and goals.matches == 1
    assert len(goals.concepts[0].evidence) == 1 and goals.concepts[0].evidence_count == 2
    nothing = search_concepts(merged.staging, merged.archive, ConceptSearchRequest(query="sourdough"))
    assert nothing.matches == 0 and nothing.concepts == []


def test_a_memory_without_concepts_says_what_to_run(tmp_path: Path) -> None:
    """No concept store yet: a QueryError naming the command, for search and timeline alike."""
    dbs = open_dbs(tmp_path)
    with pytest.raises(QueryError, match="chatmem run"):
        search_concepts(dbs.staging, dbs.archive, ConceptSearchRequest(query="anything"))
    with pytest.raises(QueryError, match="chatmem run"):
        timeline(dbs.staging, dbs.archive, TimelineRequest(concept="anything"))


def test_timeline_follows_a_merged_name_to_its_survivor_oldest_first(merged: Dbs) -> None:
    """The merged name resolves to the survivor; every dated mention once, oldest first, first/last seen overall."""
    result = timeline(merged.staging, merged.archive, TimelineRequest(concept="HOME  remodel"))
    assert result.concept_id == "kitchen-renovation" and result.kinds == ["evidence"]
    ids = [e.message_id for e in result.entries]
    assert ids == ["a-m0", "a-m1", "b-m0", "c-m0", "c-m1"] and result.total == 5
    assert [e.at for e in result.entries] == sorted(e.at for e in result.entries if e.at)
    assert result.entries[2].conversation_title == "title of b" and result.entries[2].kind == "evidence"
    assert result.first_seen == T0 and result.last_seen == T0 + timedelta(days=2, minutes=1)


def test_timeline_windows_and_limits_but_reports_the_whole_span(merged: Dbs) -> None:
    """since/until keep a window (total counts it), limit cuts the list; first/last seen stay those of all entries."""
    request = TimelineRequest(concept="kitchen-renovation", since=T0 + timedelta(days=1), limit=1)
    result = timeline(merged.staging, merged.archive, request)
    assert result.total == 3 and [e.message_id for e in result.entries] == ["b-m0"]
    assert result.first_seen == T0
    with pytest.raises(QueryError, match="search_concepts"):
        timeline(merged.staging, merged.archive, TimelineRequest(concept="bathroom"))


def fact_row(
    fact_id: str, value: str, day: int, message_id: str, state: str, until: int | None = None
) -> dict[str, Any]:
    """A stored fact interval (staging/facts.py's columns) about the kitchen renovation's budget."""
    start, end = (
        (T0 + timedelta(days=day)).isoformat(),
        None if until is None else (T0 + timedelta(days=until)).isoformat(),
    )
    return {
        "fact_id": fact_id, "subject": "kitchen renovation", "attribute": "budget", "value": value,
        "value_key": value, "polarity": "positive", "valid_from": start, "valid_to": end, "recorded_at": start,
        "invalidated_at": end, "state": state, "superseded_by": None, "support": 1, "last_stated": start,
        "message_ids": [message_id], "evidence": [value], "subject_concept_id": "kitchen-renovation",
        "value_concept_id": None, "run_id": "t",
    }  # fmt: skip


def test_timeline_shows_the_gardens_facts_with_their_validity(merged: Dbs) -> None:
    """Facts about the concept join its evidence, dated by valid_from, with valid_to; retracted ones left out."""
    upsert_facts(
        merged.staging,
        [
            fact_row("f1", "10k", 0, "a-m1", "superseded", until=2),
            fact_row("f2", "15k", 2, "c-m1", "valid"),
            fact_row("f3", "20k", 1, "b-m0", "retracted"),
        ],
    )
    merged.staging.commit()
    result = timeline(merged.staging, merged.archive, TimelineRequest(concept="kitchen-renovation"))
    facts = [(e.text, e.at, e.valid_to, e.confidence, e.conversation_id) for e in result.entries if e.kind == "fact"]
    assert facts == [
        ("kitchen renovation budget: 10k", T0, T0 + timedelta(days=2), 0.5, "a"),
        ("kitchen renovation budget: 15k", T0 + timedelta(days=2), None, 1.0, "c"),
    ]
    assert result.kinds == ["evidence", "fact"] and result.total == 7
    assert [e.at for e in result.entries] == sorted(e.at for e in result.entries if e.at)


def test_timeline_says_a_facts_value_of_the_user(merged: Dbs) -> None:
    """A fact's value keeps the user's words ("giving my partner a small gift"); the timeline's line says it of the
    user, as `chatmem facts` and recall do ("their partner")."""
    upsert_facts(merged.staging, [fact_row("f1", "giving my partner a small gift", 0, "a-m1", "valid")])
    merged.staging.commit()
    result = timeline(merged.staging, merged.archive, TimelineRequest(concept="kitchen-renovation"))
    facts = [e.text for e in result.entries if e.kind == "fact"]
    assert facts == ["kitchen renovation budget: giving their partner a small gift"]


@pytest.fixture
def branchy(tmp_path: Path) -> Dbs:
    """Conversation x: six visible messages on the active path, one hidden, one on an abandoned branch."""
    messages = [Msg("user", f"visible {i}") for i in range(3)]
    messages += [Msg("system", "hidden prompt", hidden=True), Msg("assistant", "old answer", active=False)]
    messages += [Msg("assistant", f"visible {i}") for i in range(3, 6)]
    dbs = open_dbs(tmp_path)
    write_archive(dbs.archive, [conversation("x", messages), conversation("y", [("user", "elsewhere")])])
    return dbs


def test_a_conversation_reads_its_active_path_in_pages(branchy: Dbs) -> None:
    """Hidden and abandoned-branch messages are left out; offset/limit page through; more_* say what is left."""
    first = get_conversation(branchy.archive, ConversationRequest(conversation_id="x", limit=4))
    assert [m.text for m in first.messages] == ["visible 0", "visible 1", "visible 2", "visible 3"]
    assert first.path_length == 6 and not first.more_before and first.more_after
    assert first.title == "title of x" and first.source == "jsonl" and first.created_at == T0
    rest = get_conversation(branchy.archive, ConversationRequest(conversation_id="x", offset=4, limit=4))
    assert [m.position for m in rest.messages] == [4, 5] and rest.more_before and not rest.more_after


def test_a_window_centers_on_the_message_and_respects_the_limit(branchy: Dbs) -> None:
    """around_message_id shows `window` messages either side, clipped at the ends, cut to `limit` around it."""
    around = ConversationRequest(conversation_id="x", around_message_id="x-m2", window=1)
    assert [m.message_id for m in get_conversation(branchy.archive, around).messages] == ["x-m1", "x-m2", "x-m5"]
    edge = ConversationRequest(conversation_id="x", around_message_id="x-m0", window=2)
    assert [m.position for m in get_conversation(branchy.archive, edge).messages] == [0, 1, 2]
    capped = ConversationRequest(conversation_id="x", around_message_id="x-m5", window=10, limit=3)
    result = get_conversation(branchy.archive, capped)
    assert [m.message_id for m in result.messages] == ["x-m2", "x-m5", "x-m6"] and result.more_before


def test_a_huge_message_comes_back_cut_with_a_marker_and_its_whole_size(tmp_path: Path) -> None:
    """A message of megabytes (a cold try's 50 MB one got no answer in 110 s) comes back as its first
    MESSAGE_CHARS characters and a marker saying how much was cut and where to read the rest (full_tokens set);
    a normal message beside it comes back whole."""
    huge = "Lisbon tram trip. " * 200_000  # 3.6 MB
    dbs = open_dbs(tmp_path)
    write_archive(dbs.archive, [conversation("z", [("user", huge), ("assistant", "a short answer")])])
    result = get_conversation(dbs.archive, ConversationRequest(conversation_id="z"))
    cut, whole = result.messages
    assert cut.text.startswith(huge[:MESSAGE_CHARS]) and len(cut.text) < MESSAGE_CHARS + 300
    assert f"the first {MESSAGE_CHARS:,} of {len(huge):,} characters shown" in cut.text and "recall" in cut.text
    assert cut.full_tokens == estimate_tokens(huge)
    assert whole.text == "a short answer" and whole.full_tokens is None


@pytest.mark.parametrize(
    ("conversation_id", "message_id", "says"),
    [
        ("nope", None, "unknown conversation 'nope'"),
        ("x", "x-zz", "unknown message 'x-zz'"),
        ("x", "y-m0", "is in conversation 'y'"),
        ("x", "x-m4", "branch"),
        ("x", "x-m3", "hidden"),
    ],
)
def test_a_request_naming_nothing_on_the_path_says_why(
    branchy: Dbs, conversation_id: str, message_id: str | None, says: str
) -> None:
    """Unknown conversation or message, another conversation's message, a branch, a hidden message: one line each."""
    request = ConversationRequest(conversation_id=conversation_id, around_message_id=message_id)
    with pytest.raises(QueryError, match=says):
        get_conversation(branchy.archive, request)


def test_topics_before_any_clustering_say_so(merged: Dbs) -> None:
    """No cluster run: no topics, and a note saying what to run (not an error)."""
    result = topics(merged.staging, TopicsRequest())
    assert result.run_id is None and result.topics == [] and result.note and "chatmem run" in result.note


def test_a_conversation_reads_as_recall_shows_it_and_as_stored_when_raw(tmp_path: Path) -> None:
    """get_conversation returns a Claude reply without its <antThinking> notes and its artifact by title, as recall
    shows it; raw=true returns the archive's text, markup and notes included."""
    component = "\n".join(f"const row{i} = {i};" for i in range(30))
    reply = (
        "<antThinking>A Quorvex widget suits an artifact.</antThinking>\n\nHere is the timer.\n\n"
        f'<antArtifact identifier="t" type="application/vnd.ant.react" title="Pomodoro Timer">\n{component}\n'
        "</antArtifact>"
    )
    dbs = open_dbs(tmp_path)
    write_archive(dbs.archive, [conversation("c", [("user", "Build me a timer"), ("assistant", reply)])])
    shown = get_conversation(dbs.archive, ConversationRequest(conversation_id="c")).messages[1].text
    assert "Quorvex" not in shown and "<ant" not in shown and "const row29" not in shown
    assert shown.startswith("Here is the timer.\n\n[artifact: Pomodoro Timer]\n```jsx\nconst row0 = 0;")
    raw = get_conversation(dbs.archive, ConversationRequest(conversation_id="c", raw=True)).messages[1].text
    assert raw == reply
