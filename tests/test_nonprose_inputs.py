"""What is not prose in an export (a model's reasoning, what a tool returned, colour codes, the digits of a quantity,
an artifact's tag) is kept in the archive but never read as a concept or shown as one's evidence (issue 20)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from concept_support import segment_input

from clients.prose import prose
from contracts.records import ExportConversation
from extract.offline import OfflineExtractor
from extract.types import SegmentInput, SegmentMessage
from ingest import chatgpt
from ingest.claude import render_message

ARTIFACTS = Path(__file__).resolve().parents[2] / "shared" / "data" / "exports" / "claude" / "claude-to-sqlite"


def titles(segment: SegmentInput, max_concepts: int = 12) -> list[str]:
    return [h.title for h in OfflineExtractor(max_concepts, open_ranks=max_concepts).extract(segment).hypotheses]


def _node(key: str, parent: str | None, role: str, content: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A mapping node as a ChatGPT export writes it (o1/o3 reasoning turns included)."""
    message = {
        "id": key,
        "author": {"role": role, "name": extra.get("name"), "metadata": {}},
        "create_time": 1_700_000_000 + len(key),
        "content": content,
        "status": "finished_successfully",
        "metadata": extra.get("metadata", {}),
        "recipient": extra.get("recipient", "all"),
    }
    return {"id": key, "parent": parent, "children": [], "message": message}


THOUGHTS = {
    "content_type": "thoughts",
    "thoughts": [
        {
            "summary": "Estimating battery needs",
            "content": "Zorblax Quantum cells aside, I should compute the Pixel's draw per day.",
            "chunks": [],
            "finished": True,
        },
        {"summary": "Weighing options", "content": "Maybe the Flibbertigibbet Protocol matters.", "finished": True},
    ],
    "source_analysis_msg_id": "x",
}


def _reasoning_conversation() -> ExportConversation:
    turns = [
        ("u1", "user", {"content_type": "text", "parts": ["Is the Anker PowerCore enough for my Pixel on a hike?"]}),
        ("th", "assistant", THOUGHTS),
        ("rc", "assistant", {"content_type": "reasoning_recap", "content": "Thought for 12 seconds"}),
        ("a1", "assistant", {"content_type": "text", "parts": ["The Anker PowerCore charges the Pixel once."]}),
    ]
    mapping = {}
    parent = None
    for key, role, content in turns:
        mapping[key] = _node(key, parent, role, content)
        if parent is not None:
            mapping[parent]["children"].append(key)
        parent = key
    record = {"id": "conv-reasoning", "title": "Power bank", "mapping": mapping, "current_node": "a1"}
    (conversation,) = [c for c in chatgpt.parse_conversation(record, 0) if isinstance(c, ExportConversation)]
    return conversation


def _segment(conversation: ExportConversation) -> SegmentInput:
    messages = sorted(conversation.messages, key=lambda m: m.seq)
    return SegmentInput(
        "s",
        conversation.id,
        conversation.title,
        tuple(SegmentMessage(m.uuid, m.role, m.text, m.created_at) for m in messages),
        "h",
    )


def test_chatgpt_reasoning_is_archived_whole_but_no_concept_comes_from_it() -> None:
    """A reasoning model's `thoughts` and `reasoning_recap` turns keep their text in the archive, closed as a thinking
    block, and the prose view blanks them: a name only the reasoning says is no concept; the reply's names are."""
    conversation = _reasoning_conversation()
    by_id = {m.uuid: m for m in conversation.messages}
    assert "Zorblax Quantum cells" in by_id["th"].text and "Thought for 12 seconds" in by_id["rc"].text
    assert by_id["th"].content_type == "thoughts" and by_id["th"].role == "assistant"
    assert prose(by_id["th"].text).strip() == "" and prose(by_id["rc"].text).strip() == ""
    found = titles(_segment(conversation))
    assert "Anker PowerCore" in found and "Pixel" in found, found
    assert not any("Zorblax" in t or "Flibbertigibbet" in t for t in found), found


def test_claude_tool_results_are_archived_whole_but_no_concept_comes_from_them() -> None:
    """What a tool returned (a web page a search fetched) is rendered closed, "[tool_result NAME]...[/tool_result]",
    and left out of the prose: the reply that uses it says what matters; the text after the block is read."""
    page = "Grizzlebrook Flour Mill recommends the Vexmoor Drying Method for a Zanthium culture."
    blocks = [
        {"type": "tool_use", "name": "web_search", "input": {"query": "dry sourdough starter"}},
        {
            "type": "tool_result",
            "name": "web_search",
            "content": [{"type": "knowledge", "title": "Blog", "url": "https://example.org/s", "text": page}],
            "is_error": False,
        },
        {"type": "text", "text": "Dry your sourdough starter on parchment before the Lisbon trip."},
    ]
    text, kind, _ = render_message({"content": blocks})
    assert page in text and kind == "text+tool_result+tool_use"
    view = prose(text)
    assert len(view) == len(text) and "Vexmoor" not in view and "tool_result" not in view
    assert "Dry your sourdough starter on parchment before the Lisbon trip." in view
    segment = segment_input(
        "seg-tool", [("user", "How do I keep my sourdough starter alive in Lisbon?"), ("assistant", text)]
    )
    found = titles(segment)
    assert "Lisbon" in found and not any(w in t for t in found for w in ("Vexmoor", "Zanthium", "Grizzlebrook"))


def test_hex_colours_and_the_digits_of_a_quantity_are_no_concepts() -> None:
    """Colour codes, with "#" or bare ("#FF5733", "F7DC6F", "#ccc", "1E90FF"), and the digit group a thousands
    separator cut from its unit ("000mAh" of "5,000mAh", "5 000mAh", "1'500mAh") are values, never concepts; a name
    with digits (B2B, A380) and the names around them stay."""
    segment = segment_input(
        "seg-values",
        [
            ("user", "Is a 5,000mAh Anker PowerCore enough, or the 10 000mAh Nitecore NB10000 or a 1'500mAh Zendure?"),
            (
                "assistant",
                "The Anker PowerCore with 5,000mAh charges a Pixel once. For the trip page use F7DC6F, #FF5733, #ccc "
                "and 1E90FF on the header. The Nitecore NB10000 weighs 150 g; the Zendure suits B2B orders on an A380.",
            ),
        ],
    )
    found = titles(segment, 20)
    assert "Anker PowerCore" in found and "Nitecore NB10000" in found, found
    words = {w.casefold() for t in found for w in t.split()}
    assert not words & {"000mah", "mah", "1'500mah", "f7dc6f", "ff5733", "ccc", "1e90ff", "000"}, found
    view = prose(segment.messages[1].text)
    assert "F7DC6F" not in view and "#FF5733" not in view and "1E90FF" not in view and "#ccc" not in view
    assert "B2B" in view and "A380" in view and "NB10000" in view
    assert "a #bad idea" in prose("That was a #bad idea.")  # a hashtag of words is left as written


def test_an_artifacts_tag_is_never_a_concepts_evidence_on_a_real_export() -> None:
    """claude-to-sqlite's artifacts.json (a real claude.ai export): no evidence span of any concept holds the
    artifact tag's markup ('antArtifact identifier=... type="text/html"'), though the artifact's kind (HTML) and
    title are mentions."""
    path = ARTIFACTS / "tests" / "artifacts.json"
    if not path.is_file():
        pytest.skip(f"{path} is absent (read from ../shared/data, not copied)")
    segments = []
    for number, conversation in enumerate(json.loads(path.read_text())):
        turns = sorted(conversation["chat_messages"], key=lambda m: m["created_at"])
        roles = {"human": "user", "assistant": "assistant"}
        segments.append(segment_input(f"art-{number}", [(roles[m["sender"]], m["text"]) for m in turns[:16]]))
    spans = [
        (h.title, e.text)
        for s in segments
        for h in OfflineExtractor(12, open_ranks=12).extract(s).hypotheses
        for e in h.evidence_spans
    ]
    assert any(t == "HTML" for t, _ in spans), spans
    assert all("HTML" in e for t, e in spans if t == "HTML"), spans  # cited where the prose says it, not 'text/html'
    assert not any("antArtifact" in e or "identifier=" in e or "<" in e for _, e in spans), spans


def test_a_mention_inside_a_tag_cites_only_its_own_words() -> None:
    """A concept named only by an artifact's title attribute cites the title, not the tag around it."""
    reply = (
        "Here it is.\n"
        '<antArtifact identifier="planner" type="text/markdown" title="Vexmoor Feeding Planner">'
        "Feed at 9am.</antArtifact>"
    )
    segment = segment_input("seg-title", [("user", "Plan my Vexmoor Feeding Planner please."), ("assistant", reply)])
    (hypothesis,) = [h for h in OfflineExtractor(12, open_ranks=12).extract(segment).hypotheses if "Vexmoor" in h.title]
    cited = [e.text for e in hypothesis.evidence_spans]
    assert "Vexmoor Feeding Planner" in cited, cited
    assert not any("antArtifact" in e or "identifier" in e for e in cited), cited


def test_an_images_pointer_is_no_concept() -> None:
    """A ChatGPT message with images reads "[image: POINTER WxH]" in the archive (older exports point with
    "file-service://file-...", newer with "sediment://file_..."): neither the pointer nor its size is a concept."""
    from ingest.chatgpt_content import render_content

    def asked(pointer: str) -> str:
        part = {"content_type": "image_asset_pointer", "asset_pointer": pointer, "width": 800, "height": 600}
        text, _ = render_content({"content_type": "multimodal_text", "parts": [part, "What plant is this?"]})
        return text

    pointers = ["file-service://file-AbC1xYz9Qw", "file-service://file-Kd8Lm2Pq7R", "sediment://file_00000000b1c2"]
    turns = [("user", asked(p)) for p in pointers] + [("assistant", "It looks like a Monstera deliciosa.")]
    assert "[image: file-service://file-AbC1xYz9Qw 800x600]" in turns[0][1]
    found = titles(segment_input("seg-images", turns))
    assert "Monstera deliciosa" in found and not any("file" in t.casefold() or "800" in t for t in found), found
