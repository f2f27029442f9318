"""Recall and the LLM extractor's prompt show a message without a model's private notes and raw artifact tags, and
recall finds it by what it shows; the archive's text is not changed (issue 20)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from memory_support import memory, msg

from clients.shown import CODE_LINES, THINKING_ONLY, shown_text
from contracts.memory import RecallRequest
from ingest.chatgpt_content import render_content
from ingest.claude import render_message
from memory.recall import recall

ARTIFACTS = Path(__file__).resolve().parents[2] / "shared" / "data" / "exports" / "claude" / "claude-to-sqlite"

COMPONENT = "\n".join(
    ["import React from 'react';", *(f"const row{i} = {i};" for i in range(30)), "export default App;"]
)
CLAUDE_REPLY = (
    "<antThinking>A Quorvex widget suits an artifact.</antThinking>\n\n"
    "Here is the Pomodoro timer for your study plan.\n\n"
    f'<antArtifact identifier="timer" type="application/vnd.ant.react" title="Pomodoro Timer">\n{COMPONENT}\n'
    "</antArtifact>\n\n"
    '<antArtifact identifier="plan" type="text/markdown" title="Study Plan">\n# Week 1\nRead the Kafka chapter.\n'
    "</antArtifact>"
)


def test_a_claude_reply_is_shown_without_its_notes_and_with_its_artifacts_by_title() -> None:
    """<antThinking> is left out; a code artifact reads "[artifact: Title]" and its code fenced, cut to CODE_LINES
    lines with a count of the rest; a document artifact reads its title and its text."""
    text = shown_text(CLAUDE_REPLY)
    assert "Quorvex" not in text and "antThinking" not in text and "antArtifact" not in text
    assert "Here is the Pomodoro timer for your study plan." in text
    assert "[artifact: Pomodoro Timer]\n```jsx\nimport React from 'react';\n" in text
    assert f"const row{CODE_LINES - 2} = " in text and f"const row{CODE_LINES - 1} = " not in text
    assert f"[… {len(COMPONENT.splitlines()) - CODE_LINES} more line(s) of code not shown]" in text
    assert "[artifact: Study Plan]\n# Week 1\nRead the Kafka chapter." in text
    assert shown_text("Plain text, [links](x) and <b>tags</b> stay.") == "Plain text, [links](x) and <b>tags</b> stay."


def test_reasoning_and_tool_blocks_as_the_ingest_renders_them_are_shown_short_or_not_at_all() -> None:
    """A ChatGPT reasoning turn reads THINKING_ONLY; Claude's thinking block is left out, an `artifacts` tool call
    reads as its artifact, another tool call and a tool's result as one short line."""
    thoughts, _ = render_content({"content_type": "thoughts", "thoughts": [{"summary": "S", "content": "Zorblax"}]})
    assert shown_text(thoughts) == THINKING_ONLY
    blocks = [
        {"type": "thinking", "thinking": "Maybe mention the Oceanarium."},
        {"type": "tool_use", "name": "web_search", "input": {"query": "Lisbon trams"}},
        {"type": "tool_result", "name": "web_search", "content": [{"type": "text", "text": "Tram 28 " * 100}]},
        {"type": "text", "text": "Take tram 28 to Alfama."},
        {
            "type": "tool_use",
            "name": "artifacts",
            "input": {"title": "Tram Map", "type": "application/vnd.ant.react", "content": COMPONENT},
        },
    ]
    text, _, _ = render_message({"content": blocks})
    view = shown_text(text)
    assert "Oceanarium" not in view and "[thinking" not in view and "[/tool_result]" not in view
    assert '[tool_use web_search] {"query": "Lisbon trams"}' in view and "Take tram 28 to Alfama." in view
    assert max(len(line) for line in view.splitlines()) < 260  # the page is cut to one short line
    assert "[artifact: Tram Map]\n```jsx\nimport React" in view and "more line(s) of code not shown" in view


def test_recall_shows_no_notes_nor_tags_and_does_not_find_a_message_by_its_notes() -> None:
    """A recalled Claude reply shows its artifacts by title and no notes; a word only its notes hold brings back
    nothing of it; the index's text (the archive's) keeps them."""
    messages = [
        msg("study", 0, "Can you build me a Pomodoro timer for my study plan?", 0),
        msg("study", 1, CLAUDE_REPLY, 0, role="assistant", minute=1),
        msg("other", 0, "What should I cook tonight?", 3),
    ]
    index, settings = memory(messages)
    answer = recall(index, None, RecallRequest(query="Pomodoro timer"), settings)
    (reply,) = [p for p in answer.pieces if p.content_id == "study-1"]
    assert "[artifact: Pomodoro Timer]" in reply.text
    assert "antArtifact" not in reply.text and "Quorvex" not in reply.text and "antThinking" not in reply.text
    assert reply.tokens < len(CLAUDE_REPLY) // 4  # the budget counts what is shown
    notes = recall(index, None, RecallRequest(query="Quorvex widget"), settings)
    assert "study-1" not in {p.content_id for p in notes.pieces}
    assert "Quorvex" in index.text(index.position["study-1"])  # the archive's text is untouched


def test_a_real_claude_export_is_recalled_without_artifact_tags() -> None:
    """claude-to-sqlite's artifacts.json (a real claude.ai export): every reply with an artifact is shown with
    "[artifact: ...]" and without the tag or its attributes."""
    path = ARTIFACTS / "tests" / "artifacts.json"
    if not path.is_file():
        pytest.skip(f"{path} is absent (read from ../shared/data, not copied)")
    texts = [m["text"] for c in json.loads(path.read_text()) for m in c["chat_messages"] if "<antArtifact" in m["text"]]
    assert texts
    for text in texts:
        view = shown_text(text)
        assert "[artifact: " in view and "<antArtifact" not in view and "identifier=" not in view
        assert len(view) < len(text)


def test_the_llm_extractor_reads_messages_as_they_are_shown_and_no_tool_turns() -> None:
    """The extraction prompt shows a Claude reply without its notes and with its artifact by title and its code cut,
    and leaves a tool's own turn out (a page a search fetched), as the offline extractor does."""
    from concept_support import segment_input

    from extract.prompts import build_messages

    segment = segment_input(
        "seg-llm",
        [
            ("user", "Can you build me a Pomodoro timer for my study plan?"),
            ("tool", "Grizzlebrook Flour Mill recommends the Vexmoor Drying Method."),
            ("assistant", CLAUDE_REPLY),
        ],
    )
    prompt = build_messages(segment)[1]["content"]
    assert "Here is the Pomodoro timer for your study plan." in prompt and "[artifact: Pomodoro Timer]" in prompt
    assert "Quorvex" not in prompt and "antArtifact" not in prompt and "Vexmoor" not in prompt
    assert "[m1]" not in prompt and "[m0] user" in prompt and "[m2] assistant" in prompt


def test_a_long_fenced_code_block_in_a_reply_is_cut_as_an_artifacts_code_is() -> None:
    """A reply's fenced block longer than CODE_LINES lines shows its first CODE_LINES lines, its closing fence and a
    count of the rest; a short block, and a message with no long block, come back as they are."""
    code = "\n".join(f"step_{i} = run({i})" for i in range(30))
    reply = f"Use a loop.\n\n```python\n{code}\n```\n\nIt retries each step.\n\n~~~\nshort\n~~~"
    text = shown_text(reply)
    assert text.startswith("Use a loop.\n\n```python\nstep_0 = run(0)\n")
    assert f"step_{CODE_LINES - 1} = " in text and f"step_{CODE_LINES} = " not in text
    assert f"```\n[… {30 - CODE_LINES} more line(s) of code not shown]\n\nIt retries each step." in text
    assert text.endswith("~~~\nshort\n~~~")
    short = "Run:\n\n```\npip install polars\n```\n\n\n\nDone."
    assert shown_text(short) == short
