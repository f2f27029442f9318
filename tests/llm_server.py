"""A real HTTP server on 127.0.0.1 that speaks the OpenAI wire format, scripted per request (the guard that
refuses real model calls is in tests/llm_guard.py).

    fake_llm (fixture) -> FakeLLMServer
        POST /v1/chat/completions, /v1/responses       one scripted Reply per request
        POST /v1/embeddings                             vectors (8 letter counts per input), or `embedding_script`
        POST /v1/files (multipart), /v1/batches         a Batch API job run through the same replies
        GET  /v1/batches/{id}, /v1/files/{id}/content
    Reply.valid(ExtractionResponse(...))                 contract instances, never hand-shaped dicts
    Reply.text / refusal / error(429, retry_after=...) / slow(delay, then)

Replies come from `server.script` (first in, first out) and then from `server.responder(request)`, which by
default answers with no hypotheses. Every request is recorded (path, headers, JSON body, times), and the
server counts how many were in flight at once.
"""

from __future__ import annotations

import base64
import email.parser
import itertools
import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from contracts.concepts import ConceptHypothesis, EvidenceSpan, ExtractionResponse


@dataclass
class Reply:
    status: int = 200
    content: str | None = None
    refusal: str | None = None
    finish_reason: str = "stop"
    headers: dict[str, str] = field(default_factory=dict)
    error: dict[str, Any] | None = None
    delay_s: float = 0.0
    usage: tuple[int, int, int] = (100, 50, 10)  # prompt, completion (incl. reasoning), reasoning
    body: bytes | None = None  # sent as it is, instead of a wire-format reply (a proxy's HTML page, a cut body)
    echo_credentials: bool = False  # an error that quotes the request's Authorization (decoded), as careless servers do

    @classmethod
    def valid(cls, response: ExtractionResponse, **kw: Any) -> Reply:
        return cls(content=response.model_dump_json(), **kw)

    @classmethod
    def text(cls, text: str, **kw: Any) -> Reply:
        return cls(content=text, **kw)

    @classmethod
    def refused(cls, text: str = "I can't help with that.") -> Reply:
        return cls(refusal=text)

    @classmethod
    def fail(cls, status: int, *, retry_after: float | None = None, code: str | None = None) -> Reply:
        headers = {"retry-after": str(retry_after)} if retry_after is not None else {}
        error = {"message": f"scripted {status}", "type": "server_error" if status >= 500 else "invalid_request_error"}
        return cls(status=status, headers=headers, error={**error, "code": code, "param": None})

    @classmethod
    def raw(cls, body: bytes, *, status: int = 200, content_type: str = "application/json") -> Reply:
        """A reply whose body is these bytes, whatever they are (not JSON, not the wire format)."""
        return cls(status=status, body=body, headers={"content-type": content_type})

    @classmethod
    def echoing(cls, status: int) -> Reply:
        """An error whose message quotes the credentials the request carried (Bearer key or Basic user:password)."""
        return cls(
            status=status,
            error={"message": "", "type": "invalid_request_error", "code": None, "param": None},
            echo_credentials=True,
        )

    @classmethod
    def slow(cls, delay_s: float, then: Reply | None = None) -> Reply:
        reply = then or cls.valid(ExtractionResponse(hypotheses=[], facts=[]))
        return Reply(**{**reply.__dict__, "delay_s": delay_s})


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    started: float
    finished: float | None = None


def segment_id_of(body: dict[str, Any]) -> str | None:
    """The segment id a chat or responses request is about (from the prompt's 'Segment id:' line)."""
    messages = body.get("messages") or body.get("input") or []
    for message in messages:
        found = re.search(r"^Segment id: (\S+)$", str(message.get("content", "")), re.MULTILINE)
        if found:
            return found.group(1)
    return None


def quoting_responder(title: str = "Kitchen renovation", type_: str = "project") -> Callable[[dict[str, Any]], Reply]:
    """Answers every request with one hypothesis citing the first message of the prompt: its id and its first
    words, so the evidence is real. Built from the contract models, like every reply here."""

    def respond(body: dict[str, Any]) -> Reply:
        prompt = "\n".join(str(m.get("content", "")) for m in body.get("messages") or body.get("input") or [])
        segment = segment_id_of(body) or "?"
        found = re.search(r"^\[([^\]]+)\] \w+(?: at \S+)?:\n(.*)$", prompt, re.MULTILINE)
        message_id, text = (found.group(1), " ".join(found.group(2).split()[:5])) if found else ("?", "?")
        span = EvidenceSpan(source_id=segment, message_id=message_id, text=text, confidence=0.9)
        hypothesis = ConceptHypothesis(
            concept_id=title.lower().replace(" ", "-"),
            title=title,
            type=type_,  # type: ignore[arg-type]
            description=f"{title}, as the user describes it.",
            state="active",
            confidence=0.8,
            aliases=[],
            evidence_spans=[span],
            relations=[],
            revision_count=0,
            first_seen=None,
            last_seen=None,
        )
        return Reply.valid(ExtractionResponse(hypotheses=[hypothesis], facts=[]))

    return respond


class FakeLLMServer:
    def __init__(self) -> None:
        self.script: deque[Reply] = deque()
        self.embedding_script: deque[Reply] = deque()  # replies to /v1/embeddings before the default vectors
        self.responder: Callable[[dict[str, Any]], Reply] = lambda body: Reply.valid(
            ExtractionResponse(hypotheses=[], facts=[])
        )
        self.requests: list[Recorded] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.batch_polls_before_done = 1
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._stop = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,), name="fake-llm", daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def reply_with(self, *replies: Reply) -> None:
        self.script.extend(replies)

    def embedding_requests(self) -> list[Recorded]:
        return [r for r in self.requests if r.path == "/v1/embeddings"]

    def embeddings(self, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, str], dict[str, Any]]:
        """Scripted failures first; then one 8-dim vector per input (letter counts), rows in reverse order."""
        with self._lock:
            reply = self.embedding_script.popleft() if self.embedding_script else None
        if reply is not None:
            return reply.status, reply.headers, {"error": _error(reply, headers)}
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = [
            {"object": "embedding", "index": i, "embedding": [str(text).count(c) + 0.5 for c in "abcdefgh"]}
            for i, text in enumerate(inputs)
        ]
        return 200, {}, {"object": "list", "data": data[::-1], "model": body.get("model", "?")}

    def model_requests(self) -> list[Recorded]:
        return [r for r in self.requests if r.path in ("/v1/chat/completions", "/v1/responses")]

    def start(self) -> FakeLLMServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()  # wakes slow replies still sleeping
        self._httpd.shutdown()
        self._httpd.server_close()

    def next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            if self.script:
                return self.script.popleft()
        return self.responder(body)

    def new_id(self, prefix: str) -> str:
        return f"{prefix}-{next(self._ids)}"

    # ------------------------------------------------------------------ wire shapes

    def completion(self, reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
        prompt, completion, reasoning = reply.usage
        message = {"role": "assistant", "content": reply.content, "refusal": reply.refusal}
        return {
            "id": self.new_id("chatcmpl"),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "?"),
            "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason, "logprobs": None}],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
                "completion_tokens_details": {"reasoning_tokens": reasoning},
            },
        }

    def response(self, reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
        prompt, completion, reasoning = reply.usage
        part = (
            {"type": "refusal", "refusal": reply.refusal}
            if reply.refusal
            else {"type": "output_text", "text": reply.content or "", "annotations": []}
        )
        message = {"type": "message", "id": self.new_id("msg"), "role": "assistant", "status": "completed"}
        incomplete = {"reason": "max_output_tokens"} if reply.finish_reason == "length" else None
        return {
            "id": self.new_id("resp"),
            "object": "response",
            "created_at": int(time.time()),
            "model": body.get("model", "?"),
            "status": "incomplete" if incomplete else "completed",
            "incomplete_details": incomplete,
            "error": None,
            "output": [{**message, "content": [part]}],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": {
                "input_tokens": prompt,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": completion,
                "output_tokens_details": {"reasoning_tokens": reasoning},
                "total_tokens": prompt + completion,
            },
        }

    def model_reply(
        self, path: str, body: dict[str, Any], headers: dict[str, str] | None = None
    ) -> tuple[int, dict[str, str], dict[str, Any] | bytes]:
        reply = self.next_reply(body)
        if reply.delay_s:
            self._stop.wait(reply.delay_s)
        if reply.body is not None:
            return reply.status, reply.headers, reply.body
        if reply.status != 200:
            return reply.status, reply.headers, {"error": _error(reply, headers or {})}
        shaped = self.completion(reply, body) if path.endswith("/chat/completions") else self.response(reply, body)
        return 200, reply.headers, shaped

    def create_batch(self, body: dict[str, Any]) -> dict[str, Any]:
        """Runs every line through the scripted replies at once; the job reports done after a few polls."""
        output, errors = [], []
        for line in self.files[body["input_file_id"]].decode().splitlines():
            request = json.loads(line)
            status, _, shaped = self.model_reply(request["url"], request["body"])
            item = {"id": self.new_id("batch_req"), "custom_id": request["custom_id"], "error": None}
            item["response"] = {"status_code": status, "request_id": self.new_id("req"), "body": shaped}
            (output if status == 200 else errors).append(json.dumps(item))
        batch_id = self.new_id("batch")
        out_id, err_id = self.new_id("file-out"), self.new_id("file-err")
        self.files[out_id] = ("\n".join(output) + "\n").encode() if output else b""
        self.files[err_id] = ("\n".join(errors) + "\n").encode() if errors else b""
        batch = {
            "id": batch_id,
            "object": "batch",
            "endpoint": body["endpoint"],
            "input_file_id": body["input_file_id"],
            "completion_window": body["completion_window"],
            "status": "validating",
            "created_at": int(time.time()),
            "output_file_id": None,
            "error_file_id": None,
            "metadata": body.get("metadata"),
            "_polls": 0,
            "_files": (out_id if output else None, err_id if errors else None),
        }
        self.batches[batch_id] = batch
        return _public(batch)

    def retrieve_batch(self, batch_id: str) -> dict[str, Any]:
        batch = self.batches[batch_id]
        batch["_polls"] += 1
        if batch["_polls"] >= self.batch_polls_before_done:
            batch.update(status="completed", output_file_id=batch["_files"][0], error_file_id=batch["_files"][1])
        else:
            batch["status"] = "in_progress"
        return _public(batch)


def _error(reply: Reply, headers: dict[str, str]) -> dict[str, Any] | None:
    """The error object of a failed reply; an echoing one quotes the request's credentials in its message."""
    if not reply.echo_credentials:
        return reply.error
    auth = headers.get("authorization", "")
    scheme, _, value = auth.partition(" ")
    said = base64.b64decode(value).decode() if scheme.lower() == "basic" else value
    return {**(reply.error or {}), "message": f"invalid credentials {said!r} for {headers.get('host', '?')}"}


def _public(batch: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in batch.items() if not k.startswith("_")}


def _handler(server: FakeLLMServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # quiet: pytest shows failures, not traffic
            pass

        def do_GET(self) -> None:
            recorded = self._record(None)
            found = re.fullmatch(r"/v1/(batches|files)/([^/]+)(/content)?", self.path)
            if found and found.group(1) == "batches" and found.group(2) in server.batches:
                self._send(200, {}, json.dumps(server.retrieve_batch(found.group(2))).encode(), recorded)
            elif found and found.group(1) == "files" and found.group(3) and found.group(2) in server.files:
                self._send(200, {"content-type": "application/octet-stream"}, server.files[found.group(2)], recorded)
            else:
                self._send(404, {}, b'{"error": {"message": "not found"}}', recorded)

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length", 0)))
            if self.path == "/v1/files":
                data = _multipart_file(self.headers.get("content-type", ""), raw)
                recorded = self._record({"bytes": len(data)})
                file_id = server.new_id("file")
                server.files[file_id] = data
                obj = {"id": file_id, "object": "file", "bytes": len(data), "created_at": int(time.time())}
                obj |= {"filename": "batch.jsonl", "purpose": "batch", "status": "processed"}
                self._send(200, {}, json.dumps(obj).encode(), recorded)
                return
            body = json.loads(raw)
            recorded = self._record(body)
            if self.path == "/v1/batches":
                self._send(200, {}, json.dumps(server.create_batch(body)).encode(), recorded)
                return
            if self.path == "/v1/embeddings":
                status, headers, shaped = server.embeddings(body, recorded.headers)
                self._send(status, headers, json.dumps(shaped).encode(), recorded)
                return
            if self.path not in ("/v1/chat/completions", "/v1/responses"):
                self._send(404, {}, b'{"error": {"message": "not found"}}', recorded)
                return
            with server._lock:
                server.in_flight += 1
                server.max_in_flight = max(server.max_in_flight, server.in_flight)
            try:
                status, headers, shaped = server.model_reply(self.path, body, recorded.headers)
                payload = shaped if isinstance(shaped, bytes) else json.dumps(shaped).encode()
                self._send(status, headers, payload, recorded)
            finally:
                with server._lock:
                    server.in_flight -= 1

        def _record(self, body: Any) -> Recorded:
            headers = {name.lower(): value for name, value in self.headers.items()}
            recorded = Recorded(self.command, self.path, headers, body, time.monotonic())
            with server._lock:
                server.requests.append(recorded)
            return recorded

        def _send(self, status: int, headers: dict[str, str], payload: bytes, recorded: Recorded) -> None:
            headers = dict(headers)  # a scripted Reply may be sent more than once
            try:
                self.send_response(status)
                self.send_header("content-type", headers.pop("content-type", "application/json"))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout test): nothing to deliver
            recorded.finished = time.monotonic()

    return Handler


def _multipart_file(content_type: str, raw: bytes) -> bytes:
    """The bytes of the `file` part of a multipart/form-data upload (what files.create sends)."""
    message = email.parser.BytesParser().parsebytes(f"content-type: {content_type}\r\n\r\n".encode() + raw)
    for part in message.walk():
        if part.get_param("name", header="content-disposition") == "file":
            payload = part.get_payload(decode=True)
            return payload if isinstance(payload, bytes) else b""
    return b""


@pytest.fixture
def fake_llm() -> Iterator[FakeLLMServer]:
    """A scripted OpenAI-compatible server on 127.0.0.1 (a fresh one per test, in a process where no key was
    refused yet: clients.llm.REFUSED is per process, and a port may come round again)."""
    from clients.llm import REFUSED

    REFUSED.clear()
    server = FakeLLMServer().start()
    try:
        yield server
    finally:
        server.stop()
