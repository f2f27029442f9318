"""The ChatGPT conversations.json parser, on every real sample we have and on small broken inputs."""

from __future__ import annotations

import io
import itertools
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from contracts.errors import MalformedExportError
from contracts.records import ExportConversation, ExportMessage, QuarantineRecord
from ingest.chatgpt import RAW_LIMIT, parse
from ingest.chatgpt_content import all_strings, render_content

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "exports" / "chatgpt"
SHARED = ROOT.parent / "shared" / "data"
SHARED_CHATGPT = SHARED / "exports" / "chatgpt"

FIXTURE_EXPORTS = [
    FIXTURES / "chatgpt2graph" / "conversations.json",
    FIXTURES / "librechat-fixtures" / "chatgpt-citations.json",
    FIXTURES / "librechat-fixtures" / "chatgpt-export.json",
    FIXTURES / "librechat-fixtures" / "chatgpt-tree.json",
]
# No license (or share-alike): read in place from ../shared/data, never copied into tests/.
SHARED_EXPORTS = [
    SHARED_CHATGPT / "rainchinchao" / "conversations.json",
    SHARED_CHATGPT / "spark-first" / "conversations.json",
]
REAL_EXPORTS = [pytest.param(p, id=p.parent.name + "/" + p.name) for p in FIXTURE_EXPORTS + SHARED_EXPORTS]


def _needs(path: Path) -> Path:
    if not SHARED.is_dir() and SHARED in path.parents:
        pytest.skip(f"../shared/data is absent: {path} is read from there, not copied (no license to copy)")
    return path


def _parse_file(path: Path) -> tuple[list[ExportConversation], list[QuarantineRecord]]:
    with path.open("rb") as stream:
        return _split(parse(stream, name=str(path)))


def _parse_json(records: object) -> tuple[list[ExportConversation], list[QuarantineRecord]]:
    return _parse_bytes(json.dumps(records).encode())


def _parse_bytes(data: bytes) -> tuple[list[ExportConversation], list[QuarantineRecord]]:
    return _split(parse(io.BytesIO(data), name="conversations.json"))


def _split(
    items: Any,
) -> tuple[list[ExportConversation], list[QuarantineRecord]]:
    conversations, quarantined = [], []
    for item in items:
        (conversations if isinstance(item, ExportConversation) else quarantined).append(item)
    return conversations, quarantined


def _node(
    node_id: str,
    parent: str | None,
    *,
    role: str = "user",
    text: str = "hello",
    create_time: object = 1_700_000_000.0,
    children: list[str] | None = None,
    message: object = "default",
) -> dict[str, Any]:
    """One mapping node shaped like a real export's: id, parent, children, and a message."""
    if message == "default":
        message = {
            "id": node_id,
            "author": {"role": role, "name": None, "metadata": {}},
            "create_time": create_time,
            "content": {"content_type": "text", "parts": [text]},
            "status": "finished_successfully",
            "metadata": {},
        }
    return {"id": node_id, "parent": parent, "children": children or [], "message": message}


def _conversation(nodes: list[dict[str, Any]], current: str | None = None, cid: str = "c1") -> dict[str, Any]:
    """A conversation around `nodes`, with children lists made to agree with the parents (as real ones do)."""
    mapping = {n["id"]: n for n in nodes}
    for n in nodes:
        if n["parent"] in mapping and n["id"] not in mapping[n["parent"]]["children"]:
            mapping[n["parent"]]["children"].append(n["id"])
    record: dict[str, Any] = {"title": "t", "create_time": 1_700_000_000.0, "update_time": None}
    record.update({"mapping": mapping, "id": cid, "conversation_id": cid})
    if current is not None:
        record["current_node"] = current
    return record


def _root() -> dict[str, Any]:
    return _node("client-created-root", None, message=None)


def _by_uuid(conversation: ExportConversation) -> dict[str, ExportMessage]:
    return {m.uuid: m for m in conversation.messages}


# --- every real export -------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", REAL_EXPORTS)
def test_real_export_every_message_is_parsed_or_quarantined_and_none_is_quarantined(path: Path) -> None:
    """Messages parsed + quarantined equals a plain json.load count of mapping nodes with a message; 0 bad."""
    conversations, quarantined = _parse_file(_needs(path))
    source = json.loads(path.read_bytes())
    expected = sum(1 for c in source for node in c["mapping"].values() if node.get("message") is not None)
    assert sum(len(c.messages) for c in conversations) + len(quarantined) == expected
    assert quarantined == []
    assert [c.id for c in conversations] == [c.get("conversation_id") or c["id"] for c in source]


@pytest.mark.parametrize("path", REAL_EXPORTS)
def test_real_export_active_path_is_a_chain_ending_at_current_node(path: Path) -> None:
    """Active messages are seq 0..k-1, each the parent of the next, ending at the export's current_node."""
    conversations, _ = _parse_file(_needs(path))
    source = {c.get("conversation_id") or c["id"]: c for c in json.loads(path.read_bytes())}
    for conversation in conversations:
        active = [m for m in conversation.messages if m.is_active]
        assert [m.seq for m in active] == list(range(len(active)))
        assert active[0].parent_id is None
        for parent, child in itertools.pairwise(active):
            assert child.parent_id == parent.uuid
        assert active[-1].uuid == conversation.current_node
        given = source[conversation.id].get("current_node")
        if given in source[conversation.id]["mapping"]:
            assert conversation.current_node == given


@pytest.mark.parametrize("path", REAL_EXPORTS)
def test_real_export_seq_is_dense_and_every_parent_is_in_the_conversation(path: Path) -> None:
    """seq runs 0..n-1 without gaps or repeats, uuids are unique, and every parent_id is a message or None."""
    conversations, _ = _parse_file(_needs(path))
    for conversation in conversations:
        uuids = {m.uuid for m in conversation.messages}
        assert len(uuids) == len(conversation.messages)
        assert [m.seq for m in conversation.messages] == list(range(len(conversation.messages)))
        assert all(m.parent_id is None or m.parent_id in uuids for m in conversation.messages)


@pytest.mark.parametrize("path", REAL_EXPORTS)
def test_real_export_every_content_type_renders_text_where_the_source_has_some(path: Path) -> None:
    """Each message whose source content holds any text gets non-empty text; known types keep no raw JSON."""
    conversations, _ = _parse_file(_needs(path))
    contents = {
        node_id: node["message"]["content"]
        for c in json.loads(path.read_bytes())
        for node_id, node in c["mapping"].items()
        if node.get("message")
    }
    for message in (m for c in conversations for m in c.messages):
        assert message.content_type == contents[message.uuid]["content_type"]
        if all_strings(contents[message.uuid]):
            assert message.text, message.uuid
        assert message.raw is None


def test_real_content_types_are_the_ones_found_in_the_samples() -> None:
    """The fixture samples hold text, code, execution_output, tether_browsing_display and tether_quote."""
    found: Counter[str] = Counter()
    for path in FIXTURE_EXPORTS:
        conversations, _ = _parse_file(path)
        found.update(m.content_type for c in conversations for m in c.messages)
    assert set(found) == {"text", "code", "execution_output", "tether_browsing_display", "tether_quote"}


def test_code_interpreter_export_renders_code_fenced_and_output_plainly() -> None:
    """chatgpt2graph: code is a Markdown fence (language 'unknown' left out); python tool output as is."""
    (conversation,), _ = _parse_file(FIXTURES / "chatgpt2graph" / "conversations.json")
    code = [m for m in conversation.messages if m.content_type == "code"]
    outputs = [m for m in conversation.messages if m.content_type == "execution_output"]
    assert code[0].text.startswith("```\nfrom sympy import symbols, integrate, Abs")
    assert code[0].text.endswith("\n```")
    assert {m.author for m in outputs} == {"python"} and {m.role for m in outputs} == {"tool"}
    assert "1/3" in {m.text for m in outputs}


def test_browsing_export_renders_results_and_quotes_with_their_source() -> None:
    """chatgpt-export: tether_browsing_display shows the result; tether_quote its title, url and text."""
    conversations, _ = _parse_file(FIXTURES / "librechat-fixtures" / "chatgpt-export.json")
    messages = [m for c in conversations for m in c.messages]
    display = next(m for m in messages if m.content_type == "tether_browsing_display")
    assert "Volkswagen Transporter MPG" in display.text and display.author == "browser"
    quote = next(m for m in messages if "www.drive.com.au/reviews/volkswagen-transporter-review" in m.text)
    assert quote.content_type == "tether_quote"
    assert "Seven-speed dual-clutch DSG" in quote.text


def test_tree_export_keeps_every_branch_and_marks_the_current_one_active() -> None:
    """chatgpt-tree: 12 messages, 7 on the path to current_node; edits and regenerations kept inactive."""
    (conversation,), _ = _parse_file(FIXTURES / "librechat-fixtures" / "chatgpt-tree.json")
    active = [m.text for m in conversation.messages if m.is_active]
    inactive = [m.text for m in conversation.messages if not m.is_active]
    assert len(conversation.messages) == 12 and len(active) == 7
    assert active[1:6:2] == ["hi there", "hi again", "tell me a joke"]
    assert "so cool bro" in inactive and "tell me a story" in inactive


def test_export_cut_short_keeps_the_orphan_as_root_and_picks_the_latest_leaf() -> None:
    """chatgpt-citations: the first message's parent and the current_node are missing; nothing is lost."""
    (conversation,), quarantined = _parse_file(FIXTURES / "librechat-fixtures" / "chatgpt-citations.json")
    tool, answer = conversation.messages
    assert quarantined == []
    assert tool.parent_id is None and tool.content_type == "tether_browsing_display"
    assert "Signal Sciences - Crunchbase Company Profile" in tool.text
    assert answer.parent_id == tool.uuid and conversation.current_node == answer.uuid


def test_system_content_from_a_real_side_file_renders_the_model_identity() -> None:
    """model_comparisons.json: every real message content renders text (system_content: identity line)."""
    records = json.loads((FIXTURES / "side-files" / "model_comparisons.json").read_text())
    contents = [m["content"] for r in records for m in r["content"]["input"]["prompt_convo"]["messages"]]
    rendered = [render_content(c) for c in contents]
    assert all(text and raw is None for text, raw in rendered)
    system = [text for (text, _), c in zip(rendered, contents, strict=True) if c["content_type"] != "text"]
    assert system and all(t.startswith("You are ChatGPT, a large language model") for t in system)


def test_hidden_system_messages_follow_the_flag_or_a_blank_prompt() -> None:
    """rainchinchao flags its system prompts hidden; spark-first's blank ones have no flag: hidden too."""
    for path in SHARED_EXPORTS:
        conversations, _ = _parse_file(_needs(path))
        messages = [m for c in conversations for m in c.messages]
        assert all(m.is_hidden for m in messages if m.role == "system")
        assert not any(m.is_hidden for m in messages if m.role in ("user", "assistant"))


def test_rainchinchao_keeps_tool_names_as_authors() -> None:
    """Tool messages keep their tool name (bio, canmore.create_textdoc) as the author."""
    conversations, _ = _parse_file(_needs(SHARED_EXPORTS[0]))
    authors = {m.author for c in conversations for m in c.messages}
    assert {"bio", "canmore.create_textdoc", "canmore.update_textdoc", None} <= authors


def test_spark_first_uses_the_mapping_key_as_uuid_when_message_id_differs() -> None:
    """spark-first has nodes whose message.id differs from the mapping key; uuid is the key parents cite."""
    path = _needs(SHARED_EXPORTS[1])
    source = json.loads(path.read_bytes())
    differing = {key for c in source for key, n in c["mapping"].items() if n["message"] and n["message"]["id"] != key}
    conversations, _ = _parse_file(path)
    uuids = {m.uuid for c in conversations for m in c.messages}
    assert len(differing) == 62 and differing <= uuids


def test_invalid_skeleton_is_a_one_line_error_naming_the_file() -> None:
    """The redacted skeleton (placeholders, not JSON) raises a one-line MalformedExportError naming it."""
    path = _needs(SHARED_CHATGPT / "invalid-skeleton" / "sample" / "conversations.json")
    with pytest.raises(MalformedExportError) as caught:
        _parse_file(path)
    assert str(path) in str(caught.value) and "\n" not in str(caught.value)


# --- broken or unusual input, built here -------------------------------------------------------------------


def test_parent_cycle_is_quarantined_and_the_rest_kept() -> None:
    """Two messages that are each other's parent are quarantined; the linear part survives."""
    nodes = [_root(), _node("a", "client-created-root"), _node("x", "y"), _node("y", "x")]
    (conversation,), quarantined = _parse_json([_conversation(nodes, current="a")])
    assert [m.uuid for m in conversation.messages] == ["a"]
    cycle = [q for q in quarantined if "cycle" in q.reason]
    assert {q.locator for q in cycle} == {"conversations[0].message[x]", "conversations[0].message[y]"}


def test_orphan_whose_parent_is_missing_is_kept_as_a_root() -> None:
    """A node whose parent id is not in the mapping is kept with parent_id None; nothing is quarantined."""
    nodes = [_root(), _node("a", "client-created-root"), _node("b", "gone")]
    (conversation,), quarantined = _parse_json([_conversation(nodes, current="a")])
    assert _by_uuid(conversation)["b"].parent_id is None and not _by_uuid(conversation)["b"].is_active
    assert quarantined == []


def test_two_roots_are_both_kept_and_current_node_picks_the_active_one() -> None:
    """Two null-message roots each with a message: both kept; the active path is the current_node's tree."""
    nodes = [_node("r1", None, message=None), _node("r2", None, message=None)]
    nodes += [_node("a", "r1", create_time=1_700_000_100.0), _node("b", "r2", create_time=1_700_000_000.0)]
    (conversation,), _ = _parse_json([_conversation(nodes, current="b")])
    assert {m.uuid: (m.parent_id, m.is_active) for m in conversation.messages} == {
        "a": (None, False),
        "b": (None, True),
    }


def test_missing_current_node_makes_the_latest_leaf_active() -> None:
    """Without current_node, the leaf with the latest create_time ends the active path."""
    nodes = [_root(), _node("q", "client-created-root", create_time=1_700_000_000.0)]
    nodes += [_node("old", "q", create_time=1_700_000_500.0), _node("new", "q", create_time=1_700_000_900.0)]
    (conversation,), _ = _parse_json([_conversation(nodes)])
    assert conversation.current_node == "new"
    assert [m.uuid for m in conversation.messages if m.is_active] == ["q", "new"]


def test_current_node_that_does_not_exist_falls_back_to_the_latest_leaf() -> None:
    """A current_node naming no node is ignored: the latest leaf is chosen instead."""
    nodes = [_root(), _node("q", "client-created-root"), _node("a1", "q", create_time=1_700_000_200.0)]
    nodes.append(_node("a2", "q", create_time=1_700_000_100.0))
    (conversation,), _ = _parse_json([_conversation(nodes, current="no-such-node")])
    assert conversation.current_node == "a1"


def test_empty_mapping_still_yields_the_conversation() -> None:
    """A conversation with an empty mapping is yielded with no messages, so it is not lost."""
    (conversation,), quarantined = _parse_json([_conversation([], cid="empty")])
    assert conversation.id == "empty" and conversation.messages == [] and conversation.current_node is None
    assert quarantined == []


def test_unusable_conversation_records_are_quarantined_and_the_good_ones_parsed() -> None:
    """A string, an object with no id, and one with no mapping are quarantined by index; the others parse."""
    good = _conversation([_root(), _node("a", "client-created-root")], cid="good")
    no_id = {"title": "x", "mapping": {}}
    no_mapping = {"id": "nm", "mapping": None}
    conversations, quarantined = _parse_json(
        [good, "not a conversation", no_id, no_mapping, {**good, "id": "g2", "conversation_id": "g2"}]
    )
    assert [c.id for c in conversations] == ["good", "g2"]
    assert [q.locator for q in quarantined] == ["conversations[1]", "conversations[2]", "conversations[3]"]
    assert json.loads(quarantined[0].raw) == "not a conversation"
    assert "no id" in quarantined[1].reason and "mapping" in quarantined[2].reason
    assert quarantined[2].conversation_id == "nm"


def test_malformed_nodes_are_quarantined_one_by_one_and_their_children_keep_their_place() -> None:
    """A string message, a node that is a number, no author, no content: each quarantined; the rest kept."""
    nodes = [_root(), _node("a", "client-created-root"), _node("bad", "a", message="oops")]
    nodes += [_node("b", "bad", role="assistant"), _node("c", "b", message={"content": {"parts": ["x"]}})]
    nodes += [_node("d", "b", message={"author": {"role": "user"}})]
    record = _conversation(nodes, current="b")
    record["mapping"]["num"] = 42
    (conversation,), quarantined = _parse_json([record])
    reasons = {q.locator: q.reason for q in quarantined}
    assert reasons == {
        "conversations[0].mapping[bad]": "message is a JSON string, not an object",
        "conversations[0].mapping[c]": "message has no author object",
        "conversations[0].mapping[d]": "message has no content object",
        "conversations[0].mapping[num]": "node is a JSON number, not an object",
    }
    assert all(q.conversation_id == "c1" for q in quarantined)
    assert _by_uuid(conversation)["b"].parent_id == "a"  # passes through the quarantined node
    assert [m.uuid for m in conversation.messages if m.is_active] == ["a", "b"]


def test_timestamps_null_iso_milliseconds_and_seconds_all_become_utc() -> None:
    """create_time null → None; ISO string, epoch ms and epoch seconds → the same UTC instant."""
    times = {"n": None, "iso": "2023-11-14T22:13:20Z", "ms": 1_700_000_000_000, "s": 1_700_000_000.0}
    nodes = [_root()] + [_node(k, "client-created-root", create_time=v) for k, v in times.items()]
    (conversation,), _ = _parse_json([_conversation(nodes)])
    stamps = {m.uuid: m.created_at for m in conversation.messages}
    assert stamps["n"] is None
    assert stamps["iso"] == stamps["ms"] == stamps["s"]
    assert stamps["s"] is not None and stamps["s"].isoformat() == "2023-11-14T22:13:20+00:00"


def test_roles_outside_the_four_known_become_other_and_author_names_are_kept() -> None:
    """author.role 'critic' → 'other'; author.name of a tool is the author; a non-string name is None."""
    nodes = [_root(), _node("a", "client-created-root", role="critic"), _node("t", "a", role="tool")]
    nodes[2]["message"]["author"]["name"] = "browser"
    nodes[1]["message"]["author"]["name"] = {"odd": True}
    (conversation,), _ = _parse_json([_conversation(nodes)])
    by_uuid = _by_uuid(conversation)
    assert (by_uuid["a"].role, by_uuid["a"].author) == ("other", None)
    assert (by_uuid["t"].role, by_uuid["t"].author) == ("tool", "browser")


def test_hidden_flag_and_blank_system_prompt_hide_but_a_written_system_message_shows() -> None:
    """is_visually_hidden_from_conversation hides any role; a blank system prompt hides; a written one not."""
    nodes = [_root(), _node("blank", "client-created-root", role="system", text="")]
    nodes += [_node("custom", "blank", role="system", text="Be brief."), _node("u", "custom")]
    nodes[3]["message"]["metadata"]["is_visually_hidden_from_conversation"] = True
    (conversation,), _ = _parse_json([_conversation(nodes)])
    assert {m.uuid: m.is_hidden for m in conversation.messages} == {"blank": True, "custom": False, "u": True}


def test_a_50_mb_message_parses_whole() -> None:
    """One message with 50 MB of text is parsed in full (streaming does not cut long strings)."""
    text = "x" * 50_000_000
    nodes = [_root(), _node("big", "client-created-root", text=text)]
    (conversation,), _ = _parse_json([_conversation(nodes)])
    assert len(conversation.messages[0].text) == 50_000_000


@pytest.mark.parametrize(
    ("first_parent", "second_parent", "a_children", "b_children"),
    [
        pytest.param("a", "client-created-root", ["b"], [], id="twins-under-different-parents"),
        pytest.param("a", "a", ["b", "b"], [], id="twins-under-one-parent"),
        pytest.param("a", "a", ["b"], ["c"], id="first-twin-had-a-child"),
    ],
)
def test_duplicate_node_ids_keep_the_last_and_quarantine_a_row_for_the_lost_one(
    first_parent: str, second_parent: str, a_children: list[str], b_children: list[str]
) -> None:
    """A repeated mapping key: the last node is parsed (as json.load would); the id gets a quarantine row."""
    root = json.dumps(_node("client-created-root", None, message=None, children=["a"]))
    a = json.dumps(_node("a", "client-created-root", children=a_children))
    first_b = json.dumps(_node("b", first_parent, text="first b", children=b_children))
    second_b = json.dumps(_node("b", second_parent, text="second b"))
    c = json.dumps(_node("c", "b", text="child of first b"))
    mapping = f'{{"client-created-root": {root}, "a": {a}, "b": {first_b}, "b": {second_b}, "c": {c}}}'
    data = f'[{{"id": "c1", "title": "dup", "current_node": "b", "mapping": {mapping}}}]'.encode()
    (conversation,), quarantined = _parse_bytes(data)
    assert {m.uuid: m.text for m in conversation.messages}["b"] == "second b"
    assert len(conversation.messages) == 3  # a, the second b, c: nothing else is invented
    assert [q.locator for q in quarantined] == ["conversations[0].mapping[b]"]
    assert "two nodes with id 'b'" in quarantined[0].reason


def test_truncated_file_yields_the_complete_conversations_then_raises_naming_the_file() -> None:
    """A file cut inside its second conversation: the first is yielded, then MalformedExportError names it."""
    data = (FIXTURES / "librechat-fixtures" / "chatgpt-export.json").read_bytes()
    first_end = len(json.dumps(json.loads(data)[:1])) - 1  # where the first conversation ends, re-serialised
    cut = json.dumps(json.loads(data)).encode()[: first_end + 5000]
    seen: list[object] = []
    with pytest.raises(MalformedExportError) as caught:
        for item in parse(io.BytesIO(cut), name="dump/conversations.json"):
            seen.append(item)
    assert [type(item) for item in seen] == [ExportConversation]
    assert str(caught.value).startswith("dump/conversations.json: ") and "\n" not in str(caught.value)


def test_quarantined_raw_json_is_cut_at_the_limit_with_a_marker() -> None:
    """A huge unusable record keeps RAW_LIMIT characters of its JSON and says how long it was."""
    _, (row,) = _parse_json([{"title": "y" * (RAW_LIMIT + 10), "mapping": {}}])
    assert len(row.raw) < RAW_LIMIT + 100 and row.raw.endswith("characters in all]")


# --- content rendering, one case per documented content_type -----------------------------------------------


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ({"content_type": "text", "parts": ["a", "b"]}, "a\nb"),
        ({"content_type": "text", "parts": ["a", None, 3, ["x"]]}, 'a\n3\n["x"]'),
        ({"content_type": "code", "language": "python", "text": "print(1)"}, "```python\nprint(1)\n```"),
        ({"content_type": "execution_output", "text": "42"}, "42"),
        (
            {
                "content_type": "multimodal_text",
                "parts": [
                    {
                        "content_type": "image_asset_pointer",
                        "asset_pointer": "file-service://f1",
                        "width": 8,
                        "height": 6,
                    },
                    "what is this?",
                    {"content_type": "audio_transcription", "text": "spoken words"},
                    {"content_type": "audio_asset_pointer", "asset_pointer": "sediment://a1"},
                    {"content_type": "real_time_user_audio_video_asset_pointer"},
                ],
            },
            "[image: file-service://f1 8x6]\nwhat is this?\nspoken words\n[audio_asset_pointer: sediment://a1]\n"
            "[real_time_user_audio_video_asset_pointer]",
        ),
        ({"content_type": "tether_browsing_display", "result": "R", "summary": "S"}, "R\nS"),
        ({"content_type": "tether_quote", "title": "T", "url": "https://u", "text": "Q"}, "T\nhttps://u\nQ"),
        (
            {"content_type": "system_error", "name": "tool_error", "text": "timed out"},
            "tool_error: timed out",
        ),
        ({"content_type": "user_editable_context", "user_profile": "P", "user_instructions": "I"}, "P\nI"),
        (
            {"content_type": "thoughts", "thoughts": [{"summary": "S1", "content": "C1"}, {"content": "C2"}]},
            "[thinking]\nS1\nC1\n\nC2\n[/thinking]",
        ),
        (
            {"content_type": "reasoning_recap", "content": "Thought for 5 seconds"},
            "[thinking]\nThought for 5 seconds\n[/thinking]",
        ),
        (
            {"content_type": "sonic_webpage", "title": "T", "url": "https://u", "text": "body"},
            "T\nhttps://u\nbody",
        ),
        ({"content_type": "app_pairing_content", "context_parts": [{"text": "xcode file"}]}, "xcode file"),
    ],
    ids=lambda value: value.get("content_type", "") if isinstance(value, dict) else None,
)
def test_each_known_content_type_renders_deterministic_text_without_raw(content: dict[str, Any], expected: str) -> None:
    """Every documented content_type has its own rendering, the same on every call, and keeps no raw JSON."""
    assert render_content(content) == (expected, None)


def test_unknown_content_type_keeps_its_strings_as_text_and_its_raw_json() -> None:
    """An unknown content_type renders every string it holds, and raw is its JSON with sorted keys."""
    content = {"content_type": "hologram", "z": "last", "a": {"caption": "first"}, "n": 3}
    text, raw = render_content(content)
    assert text == "last\nfirst" and raw == json.dumps(content, sort_keys=True)


def test_a_part_of_an_unseen_shape_keeps_its_strings_and_the_raw_json() -> None:
    """A dict inside `parts` with no text and no media pointer is more than its placeholder: its strings are in the
    text and the content's raw JSON is kept, so nothing of it is lost (a number or a list part is JSON already)."""
    content = {"content_type": "text", "parts": [3.14, True, {"x": 1}, {"note": "call Ana"}]}
    text, raw = render_content(content)
    assert text == "3.14\ntrue\n[part]\n[part]\ncall Ana"
    assert raw is not None and json.loads(raw) == content
    image = {"content_type": "image_asset_pointer", "asset_pointer": "file-service://f1", "width": 2, "height": 3}
    assert render_content({"content_type": "multimodal_text", "parts": ["look", image]}) == (
        "look\n[image: file-service://f1 2x3]",
        None,
    )


def test_message_without_content_type_is_unknown_and_keeps_raw() -> None:
    """A content object with no content_type gets content_type 'unknown', its text, and its raw JSON."""
    nodes = [_root(), _node("a", "client-created-root")]
    nodes[1]["message"]["content"] = {"parts": ["kept"]}
    (conversation,), _ = _parse_json([_conversation(nodes)])
    (message,) = conversation.messages
    assert (message.content_type, message.text, message.raw) == ("unknown", "kept", '{"parts": ["kept"]}')


def test_known_type_in_an_unseen_shape_falls_back_to_its_strings_and_raw() -> None:
    """A 'text' content with no parts but a text field is not dropped: its strings and raw JSON are kept."""
    assert render_content({"content_type": "text", "text": "hi"}) == (
        "hi",
        '{"content_type": "text", "text": "hi"}',
    )
    assert render_content({"content_type": "text", "parts": [""]}) == ("", None)


def test_a_voice_mode_part_is_its_nested_audio_pointer_not_unseen_strings() -> None:
    """Every voice-mode user turn has a real_time_user_audio_video_asset_pointer part whose media pointer sits in a
    nested audio_asset_pointer: it is a media part, shown as `[label: pointer]` with no raw JSON kept (it read as a
    part of an unseen shape: the pointer and "wav" in the text, ~700 bytes of raw on every voice turn)."""
    audio = {
        "content_type": "audio_asset_pointer",
        "asset_pointer": "sediment://file_0a1",
        "size_bytes": 123,
        "format": "wav",
        "metadata": {"start_timestamp": None, "transcription": None, "start": 0.0, "end": 4.38},
    }
    voice = {
        "content_type": "real_time_user_audio_video_asset_pointer",
        "expiry_datetime": None,
        "frames_asset_pointers": [],
        "video_container_asset_pointer": None,
        "audio_asset_pointer": audio,
        "audio_start_timestamp": 5.1,
    }
    spoken = {"content_type": "audio_transcription", "text": "what is the weather", "direction": "in"}
    assert render_content({"content_type": "multimodal_text", "parts": [spoken, voice]}) == (
        "what is the weather\n[real_time_user_audio_video_asset_pointer: sediment://file_0a1]",
        None,
    )
