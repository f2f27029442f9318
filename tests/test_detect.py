"""Format detection from content: every real sample, renamed and cut copies, side files, garbage."""

from __future__ import annotations

import gzip
import io
import json
import shutil
from pathlib import Path

import pytest

from contracts.errors import ConfigError, MalformedExportError, UnsupportedFormatError
from contracts.records import EXPORT_FORMATS, ExportConversation
from ingest.detect import HEAD_BYTES, detect_format, parser_for

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "exports"
SHARED = ROOT.parent / "shared" / "data"
EXPORTS = SHARED / "exports"
SIDE = "chatgpt-side-file"
MALFORMED = "malformed"

# Every JSON file under ../shared/data/exports and what it is; a new file there must be added here.
SHARED_EXPECTED = {
    "chatgpt/chatgpt2graph/examples/conversations.json": "chatgpt",
    "chatgpt/invalid-skeleton/sample/conversations.json": MALFORMED,  # placeholders instead of numbers
    "chatgpt/invalid-skeleton/sample/model_comparisons.json": SIDE,  # invalid too, but recognised first
    "chatgpt/librechat-fixtures/chatbotui-export.json": "chatbotui",
    "chatgpt/librechat-fixtures/chatgpt-citations.json": "chatgpt",
    "chatgpt/librechat-fixtures/chatgpt-export.json": "chatgpt",
    "chatgpt/librechat-fixtures/chatgpt-tree.json": "chatgpt",
    "chatgpt/librechat-fixtures/librechat-export.json": "librechat",
    "chatgpt/librechat-fixtures/librechat-linear.json": "librechat",
    "chatgpt/librechat-fixtures/librechat-opts-nonr-branches.json": "librechat",
    "chatgpt/librechat-fixtures/librechat-tree.json": "librechat",
    "chatgpt/rainchinchao/conversations.json": "chatgpt",
    "chatgpt/rainchinchao/shared_conversations.json": SIDE,
    "chatgpt/side-files/message_feedback.json": SIDE,
    "chatgpt/side-files/model_comparisons.json": SIDE,
    "chatgpt/side-files/shared_conversations.json": SIDE,
    "chatgpt/spark-first/conversations.json": "chatgpt",
    "claude/claude-chat-viewer/testdata/claude-bakery-chat.json": "claude",
    "claude/claude-to-sqlite/tests/artifacts.json": "claude",
    "claude/claude-to-sqlite/tests/example.json": "claude",
}
CONVERSATION_FILES = [p for p, fmt in SHARED_EXPECTED.items() if fmt in EXPORT_FORMATS]


def _shared(relative: str) -> Path:
    if not EXPORTS.is_dir():
        pytest.skip("../shared/data is absent")
    return EXPORTS / relative


def _head(path: Path) -> bytes:
    with path.open("rb") as stream:
        return stream.read(HEAD_BYTES)


def _outcome(head: bytes, name: str = "file") -> str:
    try:
        return detect_format(head, name=name)
    except UnsupportedFormatError as exc:
        return exc.detected
    except MalformedExportError:
        return MALFORMED


def test_the_expectations_cover_every_json_file_under_shared_data() -> None:
    """No real sample escapes the detection test: the table lists exactly the JSON files present."""
    if not EXPORTS.is_dir():
        pytest.skip("../shared/data is absent")
    present = {str(p.relative_to(EXPORTS)) for p in EXPORTS.rglob("*.json")}
    assert present == set(SHARED_EXPECTED)


@pytest.mark.parametrize(("relative", "expected"), SHARED_EXPECTED.items(), ids=list(SHARED_EXPECTED))
def test_every_real_sample_is_detected_from_its_content(relative: str, expected: str) -> None:
    """Each real file under ../shared/data/exports is recognised (or refused) as the table says."""
    assert _outcome(_head(_shared(relative)), relative) == expected


@pytest.mark.parametrize("path", sorted(FIXTURES.rglob("*.json")), ids=lambda p: str(p.relative_to(FIXTURES)))
def test_every_copied_fixture_is_detected_from_its_content(path: Path) -> None:
    """The fixtures under tests/ (always present) are recognised by what is in them."""
    relative = path.relative_to(FIXTURES)
    if relative.parts[0] == "librechat":
        expected = "chatbotui" if "chatbotui" in path.name else "librechat"
    elif relative.parts[:2] == ("chatgpt", "side-files"):
        expected = SIDE
    else:
        expected = relative.parts[0]
    assert _outcome(_head(path)) == expected


@pytest.mark.parametrize("relative", CONVERSATION_FILES)
def test_a_renamed_copy_is_detected_the_same(relative: str, tmp_path: Path) -> None:
    """The name plays no part: the file copied as data.txt (and as notes.jsonl) detects the same."""
    source = _shared(relative)
    for new_name in ("data.txt", "notes.jsonl"):
        copy = tmp_path / new_name
        shutil.copyfile(source, copy)
        assert detect_format(_head(copy), name=str(copy)) == SHARED_EXPECTED[relative]


@pytest.mark.parametrize("relative", CONVERSATION_FILES)
def test_a_head_cut_mid_record_still_decides(relative: str) -> None:
    """Heads of 512 B, 2 KiB and 16 KiB that end inside a record still give the format."""
    data = _head(_shared(relative))
    for size in (512, 2048, 16384):
        if size >= len(data):
            continue
        with pytest.raises(ValueError):
            json.loads(data[:size])  # really cut mid-record
        assert detect_format(data[:size], name=relative) == SHARED_EXPECTED[relative]


def test_a_head_cut_inside_a_multibyte_character_still_decides() -> None:
    """A cut through a UTF-8 sequence (’ is three bytes) is the end of the head, not bad data."""
    data = (FIXTURES / "claude" / "claude-chat-viewer" / "claude-bakery-chat.json").read_bytes()
    cut = data.index("’".encode()) + 1
    assert detect_format(data[:cut], name="cut") == "claude"


def test_a_bom_and_leading_whitespace_are_skipped() -> None:
    """A UTF-8 byte-order mark and blank lines before the JSON change nothing."""
    data = (FIXTURES / "librechat" / "chatbotui-export.json").read_bytes()
    assert detect_format(b"\xef\xbb\xbf\r\n\t  " + data, name="x") == "chatbotui"


def test_key_order_does_not_matter() -> None:
    """The deciding key may come last: ChatGPT with `mapping` last, Claude with `chat_messages` first."""
    chatgpt = json.loads((FIXTURES / "chatgpt" / "chatgpt2graph" / "conversations.json").read_bytes())
    first = chatgpt[0]
    reordered = {**{k: v for k, v in first.items() if k != "mapping"}, "mapping": first["mapping"]}
    assert detect_format(json.dumps([reordered]).encode(), name="x") == "chatgpt"
    claude = json.loads((FIXTURES / "claude" / "claude-to-sqlite" / "example.json").read_bytes())
    reordered = {"chat_messages": claude[0]["chat_messages"], **claude[0]}
    assert detect_format(json.dumps([reordered]).encode(), name="x") == "claude"
    librechat = json.loads((FIXTURES / "librechat" / "librechat-linear.json").read_bytes())
    reordered = {"messages": librechat["messages"], **librechat}
    assert detect_format(json.dumps(reordered, indent=2).encode(), name="x") == "librechat"


def test_jsonl_is_detected_from_its_lines_even_when_the_first_line_is_bad() -> None:
    """Lines that are objects with conversation_id, role and text are JSONL; one bad line does not hide it."""
    good = [json.dumps({"conversation_id": "c", "id": str(i), "role": "user", "text": "t"}) for i in range(3)]
    assert detect_format("\n".join(good).encode(), name="x") == "jsonl"
    assert detect_format(good[0].encode(), name="x") == "jsonl"
    assert detect_format(("{broken\n" + "\n".join(good) + "\n").encode(), name="x") == "jsonl"
    assert detect_format(("garbage\n" + "\n".join(good) + "\n").encode(), name="x") == "jsonl"
    assert detect_format(("garbage\n" + good[0]).encode(), name="x") == "jsonl"  # no final newline


@pytest.mark.parametrize(
    ("relative", "which"),
    [
        ("chatgpt/side-files/message_feedback.json", "message_feedback.json"),
        ("chatgpt/side-files/model_comparisons.json", "model_comparisons.json"),
        ("chatgpt/side-files/shared_conversations.json", "shared_conversations.json"),
        ("chatgpt/rainchinchao/shared_conversations.json", "shared_conversations.json"),
    ],
)
def test_side_files_are_refused_with_a_message_naming_the_detected_kind(relative: str, which: str) -> None:
    """A file that sits beside conversations.json is UnsupportedFormatError naming 'chatgpt-side-file'."""
    with pytest.raises(UnsupportedFormatError) as raised:
        detect_format(_head(_shared(relative)), name=relative)
    assert raised.value.detected == SIDE
    assert str(raised.value).startswith(f"{relative}: ")
    assert SIDE in str(raised.value) and which in str(raised.value)


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"", "empty"),
        (b"  \r\n\t", "empty"),
        (b"\xef\xbb\xbf", "empty"),
        (b"hello world\n", "hello"),
        (b"<!DOCTYPE html><html>", "not a JSON"),
        (b"PK\x03\x04\x14\x00", "zip"),
        ('[{"title": "x"}]'.encode("utf-16"), "UTF-16"),
        (b'[{"title": "t", "create_time": EPOCH}]', "invalid JSON"),
        (b"\x00\x01\x02binary", "not a JSON"),
        (b'[{"title": "a conversation cut sho', "truncated"),
    ],
    ids=["empty", "blank", "bom-only", "text", "html", "zip", "utf16", "bad-json", "binary", "truncated"],
)
def test_empty_and_non_json_files_are_malformed(data: bytes, words: str) -> None:
    """Nothing to read, or not JSON at all: MalformedExportError, one line, naming the file."""
    with pytest.raises(MalformedExportError) as raised:
        detect_format(data, name="dump.json")
    message = str(raised.value)
    assert message.startswith("dump.json: ") and words in message and "\n" not in message


@pytest.mark.parametrize(
    ("data", "detected"),
    [
        (b"[1, 2]", "unknown"),
        (b'{"a": 1}', "unknown"),
        (b'[{"conversation_id": "c", "role": "user", "text": "t"}]', "json-message-list"),
        (b'[{"uuid": "p", "name": "proj", "docs": [], "prompt_template": ""}]', "claude-side-file"),
        (b'{"id": "user-1", "email": "a@b.c", "chatgpt_plus_user": false}', SIDE),
    ],
    ids=["list-of-numbers", "object", "message-list", "claude-projects", "chatgpt-user"],
)
def test_valid_json_that_is_not_a_conversations_export_is_unsupported(data: bytes, detected: str) -> None:
    """Valid JSON of another shape is UnsupportedFormatError with the kind it looks like."""
    with pytest.raises(UnsupportedFormatError) as raised:
        detect_format(data, name="x.json")
    assert raised.value.detected == detected


def test_a_real_benchmark_jsonl_of_another_shape_is_unsupported() -> None:
    """LongMemEval's JSONL (one question per line) is not the chatmem JSONL format."""
    path = SHARED / "benchmarks" / "longmemeval" / "longmemeval_s_dev50.jsonl.gz"
    if not SHARED.is_dir():
        pytest.skip("../shared/data is absent")
    with gzip.open(path, "rb") as stream:
        head = stream.read(HEAD_BYTES)
    with pytest.raises(UnsupportedFormatError, match="question_id"):
        detect_format(head, name="longmemeval.jsonl")


def test_an_empty_list_is_an_export_with_no_conversations() -> None:
    """`[]` holds no conversations; it is accepted (as chatgpt) and parses to nothing."""
    assert detect_format(b" [ ] ", name="x") == "chatgpt"
    assert list(parser_for("chatgpt")(io.BytesIO(b"[]"), name="x")) == []


def test_parser_for_maps_every_format_and_refuses_an_unknown_one() -> None:
    """Each EXPORT_FORMATS entry has a parse function; anything else is a usage error."""
    for fmt in EXPORT_FORMATS:
        assert callable(parser_for(fmt))
    with pytest.raises(ConfigError, match="xml"):
        parser_for("xml")


@pytest.mark.parametrize(
    "path",
    [p for p in sorted(FIXTURES.rglob("*.json")) if "side-files" not in p.parts],
    ids=lambda p: str(p.relative_to(FIXTURES)),
)
def test_the_detected_parser_reads_the_file(path: Path) -> None:
    """detect_format → parser_for → parse gives at least one conversation and no quarantine row."""
    parse = parser_for(detect_format(_head(path), name=path.name))
    with path.open("rb") as stream:
        items = list(parse(stream, name=path.name))
    assert items and all(isinstance(item, ExportConversation) for item in items)


@pytest.mark.parametrize(
    ("data", "name", "said"),
    [
        (bytes(range(256)) + b"\x00" * 44, "x.zip", "x.zip: not a zip file: 300 bytes that start as neither a zip"),
        (b"<!DOCTYPE html><html>", "x.zip", "not a zip file: 21 bytes that start as neither a zip archive nor JSON"),
        (bytes(range(1, 256)) * 300, "x.json", "x.json: not a JSON list or object: over 64 KiB of binary data"),
        (
            b"hello world\n",
            "notes.json",
            'notes.json: not a JSON list or object: 12 bytes of text starting "hello world"',
        ),
    ],
    ids=["random-bytes-zip", "page-named-zip", "binary", "text"],
)
def test_what_is_not_json_is_said_in_words_with_its_size_never_as_bytes(data: bytes, name: str, said: str) -> None:
    """A fake .zip (random bytes named x.zip) is "not a zip file" with its size, what else a file holds is said in
    words (binary data, or its first words quoted): before, the message quoted a Python bytes repr."""
    with pytest.raises(MalformedExportError) as raised:
        detect_format(data[:HEAD_BYTES], name=name)
    message = str(raised.value)
    assert said in message and "b'" not in message and 'b"' not in message and "\\x" not in message, message


def test_one_chatgpt_conversation_object_is_chatgpt() -> None:
    """A single ChatGPT conversation (an object with `mapping`, as one element of the export's list) is chatgpt, as a
    single Claude conversation is claude; it was refused as not "a list of conversations"."""
    assert detect_format(b'{"title": "t", "mapping": {}, "current_node": null}', name="one.json") == "chatgpt"
    assert detect_format(b'{"current_node": "n1", "title": "t"}', name="one.json") == "chatgpt"
    assert detect_format(b'{"uuid": "k", "name": "n", "chat_messages": []}', name="one.json") == "claude"
