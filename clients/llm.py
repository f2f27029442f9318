"""One call to an OpenAI-compatible endpoint, what the reply says, and which errors are worth a retry.

The shared LLM client of every stage package (extraction, topic labels, recall):

    make_client(settings) -> OpenAI                 the SDK client, its own retries off
    send(client, api, body) -> Reply                one HTTP call through the official SDK, no SDK retries
    reply_from_chat / reply_from_response           SDK objects (or Batch API bodies) -> Reply
    is_transient(error)                             the ONE predicate that says what is retried
    retry_delay(error, attempt, settings)           exponential backoff, honouring retry-after
    describe(error)                                 one line for a failure reason
    RecordedCall(settings, ...).send(client, body)  one request with retries, every attempt an llm_calls row
    Breaker                                         endpoints that failed to connect: not asked again
    REFUSED                                         keys an endpoint refused (401, 403): not sent again (KeyRefused)

What a request says (its schema, its prompt) belongs to the stage that sends it: see extract/llm_request.py.
"""

from __future__ import annotations

import hashlib
import os
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import openai
from openai import OpenAI
from openai.types.chat import ChatCompletion
from openai.types.responses import Response

from clients.auth import basic_auth
from clients.retry import retrying
from clients.usage import Usage as Usage  # re-exported: callers name it from here
from contracts.errors import ConfigError
from contracts.redact import mask_secret_shapes, redact_text, remember_secret
from contracts.settings import LLMSettings, redact_uri
from staging.llm_calls import CallRecorder, CallStatus, LLMCall

PLACEHOLDER_KEY = "not-needed"  # local servers (Ollama, vLLM, llama.cpp) ignore the key but the SDK wants one


@dataclass(frozen=True, slots=True)
class Reply:
    """What came back from one successful HTTP call, before anyone interprets the text."""

    text: str | None
    refusal: str | None
    finish_reason: str | None  # "stop", "length", "content_filter"; for /v1/responses the incomplete reason
    usage: Usage


def missing_key(settings: LLMSettings) -> str | None:
    """Why no call can be made, or None: OpenAI's own API (no base URL) with no key to send. `chatmem run` asks
    before its first stage, so that a missing key is not found only after ingest, segment and embed ran."""
    if settings.api_key or os.environ.get("OPENAI_API_KEY"):
        return None
    if settings.base_url is None and not os.environ.get("OPENAI_BASE_URL"):
        return (
            "the LLM extractor talks to OpenAI's API but no key is set:"
            " set CHATMEM_EXTRACT__LLM__API_KEY or OPENAI_API_KEY, or set a base_url for a local server"
        )
    return None


def make_client(settings: LLMSettings) -> OpenAI:
    """An SDK client with its own retries off: `is_transient` decides, and every attempt is recorded."""
    key = settings.api_key.get_secret_value() if settings.api_key else os.environ.get("OPENAI_API_KEY")
    remember_secret(key)  # from the environment too: an endpoint that echoes it finds it masked in every writer
    # Which credential is sent: the API key (configured, else OPENAI_API_KEY) as `Bearer`, whenever there is
    # one; with no key, user:password@ of the base URL as Basic auth (a proxy that takes only Basic auth);
    # with neither, a placeholder key (local servers ignore it). The URL itself never carries them.
    headers = {} if key else basic_auth(settings.base_url)
    if not key:
        problem = missing_key(settings)
        if problem:
            raise ConfigError(problem)
        key = PLACEHOLDER_KEY
    base_url = redact_uri(settings.base_url)
    # The connect timeout apart: a host that is down (no RST, packets dropped) costs seconds, not a reply's wait.
    timeout = openai.Timeout(settings.timeout_s, connect=min(settings.connect_timeout_s, settings.timeout_s))
    return OpenAI(api_key=key, base_url=base_url, timeout=timeout, max_retries=0, default_headers=headers or None)


class MalformedReply(openai.OpenAIError):
    """A successful HTTP status whose body is not the API's JSON (a proxy's HTML page, a cut or garbled body).

    A fault of that one reply: the caller fails the request (a segment, a label), never the whole stage.
    """

    def __init__(self, problem: str, body: str | None) -> None:
        super().__init__(problem)
        self.body = body


def send(client: OpenAI, api: str, body: dict[str, Any]) -> Reply:
    """One HTTP call. Raises the SDK's errors unchanged (`is_transient` sorts them), and MalformedReply for a
    2xx body that is not the wire format; KeyRefused, sending nothing, when the endpoint refused this key before
    (REFUSED: every caller, whatever it forgets to check). A secret pasted into a chat (an API key, a private key)
    is masked before it leaves (contracts.redact.mask_secret_shapes): it is worth nothing to the model, and the
    endpoint is someone else's machine."""
    body = without_pasted_secrets(body)
    REFUSED.check(client, api, body)
    create = client.chat.completions if api == "chat" else client.responses
    try:
        raw = create.with_raw_response.create(**body)
    except (openai.AuthenticationError, openai.PermissionDeniedError) as error:
        REFUSED.note(client, api, body, error)
        raise
    text = raw.http_response.text
    try:
        parsed = raw.parse()
        if api == "chat" and isinstance(parsed, ChatCompletion):
            return reply_from_chat(parsed)
        if api != "chat" and isinstance(parsed, Response):
            return reply_from_response(parsed)
        problem = f"the body is not the API's JSON (content-type {raw.http_response.headers.get('content-type')!r})"
    except (ValueError, TypeError, AttributeError, KeyError, IndexError) as exc:  # ValidationError is a ValueError
        problem = f"the body is not the API's JSON ({type(exc).__name__}: {' '.join(str(exc).split())[:200]})"
    raise MalformedReply(f"HTTP {raw.http_response.status_code} but {problem}", text[:10_000])


def without_pasted_secrets(body: dict[str, Any]) -> dict[str, Any]:
    """`body` with every string of its prompt (chat `messages`, Responses `input`) masked of secret shapes."""

    def masked(value: Any) -> Any:
        if isinstance(value, str):
            return mask_secret_shapes(value)
        if isinstance(value, dict):
            return {key: masked(item) for key, item in value.items()}
        if isinstance(value, list):
            return [masked(item) for item in value]
        return value

    return {key: masked(value) if key in ("messages", "input") else value for key, value in body.items()}


def reply_from_chat(completion: ChatCompletion) -> Reply:
    usage = Usage()
    if completion.usage is not None:
        details = completion.usage.completion_tokens_details
        usage = Usage(
            prompt_tokens=completion.usage.prompt_tokens,
            completion_tokens=completion.usage.completion_tokens,
            reasoning_tokens=(details.reasoning_tokens or 0) if details else 0,
        )
    if not completion.choices:
        return Reply(None, None, None, usage)
    choice = completion.choices[0]
    return Reply(choice.message.content, choice.message.refusal, choice.finish_reason, usage)


def reply_from_response(response: Response) -> Reply:
    usage = Usage()
    if response.usage is not None:
        usage = Usage(
            prompt_tokens=response.usage.input_tokens,
            completion_tokens=response.usage.output_tokens,
            reasoning_tokens=response.usage.output_tokens_details.reasoning_tokens,
        )
    texts: list[str] = []
    refusals: list[str] = []
    for item in response.output:
        if item.type != "message":
            continue  # reasoning summaries and tool calls carry no answer
        for part in item.content:
            if part.type == "output_text":
                texts.append(part.text)
            elif part.type == "refusal":
                refusals.append(part.refusal)
    reason = response.incomplete_details.reason if response.incomplete_details else None
    finish: str | None = "length" if reason == "max_output_tokens" else reason
    return Reply("".join(texts) if texts else None, "".join(refusals) or None, finish, usage)


def is_transient(error: BaseException) -> bool:
    """True for errors that a later identical request may not hit: rate limits (429, except an exhausted
    quota), server errors (5xx), timeouts (client-side, or 408) and dropped connections. Everything else (400,
    401, 404, 422, a bug of ours) fails the segment at once: retrying it would only spend time and money."""
    if isinstance(error, openai.APIConnectionError):  # APITimeoutError is a subclass
        return True
    if isinstance(error, openai.APIStatusError):
        if error.status_code == 429:
            return error.code != "insufficient_quota"  # billing, not load: waiting does not help
        return error.status_code == 408 or error.status_code >= 500
    return False


def retry_after(error: BaseException) -> float | None:
    """Seconds the server asked us to wait (retry-after-ms or retry-after in seconds), if it said."""
    if not isinstance(error, openai.APIStatusError):
        return None
    for header, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = error.response.headers.get(header)
        if value is None:
            continue
        try:
            return max(0.0, float(str(value)) / divisor)
        except ValueError:
            continue  # an HTTP date: rare from model servers; fall back to our own backoff
    return None


def retry_delay(error: BaseException, attempt: int, settings: LLMSettings) -> float:
    """Backoff before retry `attempt` (1-based): base * 2^(attempt-1) with up to 25 % jitter, or the server's
    retry-after when longer, never beyond retry_backoff_max_s. Jitter spreads concurrent retries apart."""
    backoff = settings.retry_backoff_s * 2.0 ** (attempt - 1) * (1 + random.random() / 4)
    return min(max(backoff, retry_after(error) or 0.0), settings.retry_backoff_max_s)


def describe(error: BaseException) -> str:
    """A one-line description of an API error (status, code, message) for the failure reason and staging."""
    if isinstance(error, openai.APIStatusError):
        code = f" {error.code}" if error.code else ""
        return " ".join(f"HTTP {error.status_code}{code}: {error.message}".split())[:1000]
    if isinstance(error, MalformedReply | KeyRefused):
        return str(error)
    if isinstance(error, openai.APITimeoutError):
        return "timed out"
    if isinstance(error, openai.APIConnectionError):
        return f"connection failed: {error.__cause__ or error}"
    return f"{type(error).__name__}: {error}"


class EndpointDown(openai.OpenAIError):
    """The endpoint failed to connect earlier (see Breaker): the request was not sent."""


def endpoint(settings: LLMSettings) -> str:
    """The base URL requests go to, credentials masked (for keys and messages)."""
    return redact_uri(settings.base_url) or os.environ.get("OPENAI_BASE_URL") or "OpenAI's API"


class Breaker:
    """Endpoints whose connection failed (refused, unreachable, timed out): later requests to them raise
    EndpointDown at once instead of waiting on the same dead server again. Whoever holds one decides how long
    it remembers: recall's expand step keeps one per process, a stage one per run. Thread-safe."""

    def __init__(self) -> None:
        self._down: dict[str, str] = {}
        self._lock = threading.Lock()

    def down(self, settings: LLMSettings) -> str | None:
        """Why the endpoint is deemed down (a one-line reason), or None."""
        with self._lock:
            return self._down.get(endpoint(settings))

    def trip(self, settings: LLMSettings, error: BaseException) -> None:
        """Remember the endpoint as down, with the first failure's reason."""
        with self._lock:
            self._down.setdefault(endpoint(settings), describe(error))


def refused_key(where: str, reason: str) -> str:
    """The one line that says an endpoint refused the API key, and what to do. Masked here (a server may quote
    the key in its 401): the line goes to logs and staging as it is."""
    return redact_text(f"the endpoint {where} refused the API key ({reason}): fix the key and run again")


class KeyRefused(openai.OpenAIError):
    """The endpoint refused this API key earlier in this process (HTTP 401 or 403): the request was not sent."""

    def __init__(self, where: str, reason: str) -> None:
        super().__init__(refused_key(where, f"{reason}, earlier in this process; not sent"))
        self.where, self.reason = where, reason


def is_key_refusal(error: BaseException) -> bool:
    """The endpoint refused the key, now (401, 403) or earlier in this process (KeyRefused): every other request
    with it would be refused the same way, so a caller stops asking rather than fail each task in turn."""
    return isinstance(error, openai.AuthenticationError | openai.PermissionDeniedError | KeyRefused)


class Refusals:
    """Credentials an endpoint refused (HTTP 401 or 403), for the life of the process: `send` sends nothing
    more with them (KeyRefused at once), so that no caller (a stage's thousands of segments, a Dask worker's
    batches, topic labels, each recall) spends a request per task on a key that cannot work. Keyed by the base
    URL, the API (chat, responses), a digest of the credentials (never the key itself) and the model: another
    key, a fixed one read on a new start, a model or an API the key may use (a key without the Responses scope
    still names topics over chat completions) is asked. Thread-safe."""

    def __init__(self) -> None:
        self._refused: dict[tuple[str, str, str, str], str] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _key(client: OpenAI, api: str, body: dict[str, Any]) -> tuple[str, str, str, str]:
        auth = next((v for k, v in client.default_headers.items() if k.lower() == "authorization"), "")
        digest = hashlib.sha256(f"{client.api_key}\0{auth}".encode()).hexdigest()
        return str(client.base_url).rstrip("/"), api, digest, str(body.get("model"))

    def check(self, client: OpenAI, api: str, body: dict[str, Any]) -> None:
        """KeyRefused when this client's key was refused for this API and model before; else nothing."""
        key = self._key(client, api, body)
        with self._lock:
            reason = self._refused.get(key)
        if reason is not None:
            raise KeyRefused(key[0], reason)

    def note(self, client: OpenAI, api: str, body: dict[str, Any], error: BaseException) -> None:
        """Remember the refusal, with the first one's reason (masked: a server may quote the key)."""
        with self._lock:
            self._refused.setdefault(self._key(client, api, body), redact_text(describe(error)))

    def clear(self) -> None:
        with self._lock:
            self._refused.clear()


REFUSED = Refusals()


@dataclass(slots=True)
class RecordedCall:
    """One logical request (a topic's label, a recall's expand decision): sent with retries on transient
    errors, every attempt handed to `on_call` as an llm_calls row.

        call = RecordedCall(llm, segment_id=..., cache_key=..., request=..., on_call=on_call)
        reply = call.send(client, body)              # each failed attempt recorded; the last error raised
        call.record("ok", raw_response=..., **usage_fields(reply))    # the answered attempt, as judged

    `request` is what the row keeps of the request (model, messages, prompt version): never the key.
    """

    settings: LLMSettings
    segment_id: str
    cache_key: str
    request: dict[str, Any]
    on_call: CallRecorder | None = None
    api: str = "chat"
    attempt: int = 0
    started: float = field(default_factory=time.monotonic)

    def record(self, status: CallStatus, **values: Any) -> None:
        """The current attempt as one llm_calls row (no-op without `on_call`)."""
        if self.on_call is None:
            return
        self.on_call(
            LLMCall(
                segment_id=self.segment_id,
                cache_key=self.cache_key,
                attempt=self.attempt,
                api=self.api,
                model=self.settings.model,
                reasoning_effort=self.settings.reasoning_effort,
                request=self.request,
                status=status,
                latency_s=round(time.monotonic() - self.started, 4),
                **values,
            )
        )

    def send(
        self,
        client: OpenAI,
        body: dict[str, Any],
        *,
        retry: Callable[[BaseException], bool] = is_transient,
        breaker: Breaker | None = None,
    ) -> Reply:
        """The reply, retried while `retry(error)` holds (default: `is_transient`) and retries last. Raises the
        last SDK error; with a `breaker`, EndpointDown at once for an endpoint that failed to connect before, and
        a connection failure marks the endpoint down. KeyRefused at once, nothing recorded, for a refused key."""
        if breaker is not None and (reason := breaker.down(self.settings)) is not None:
            raise EndpointDown(f"the endpoint {endpoint(self.settings)} failed earlier ({reason}); not asked again")
        REFUSED.check(client, self.api, body)  # before any attempt: a request not sent is no llm_calls row

        def attempt_once(attempt: int) -> Reply:
            self.started, self.attempt = time.monotonic(), attempt
            return send(client, self.api, body)

        def failed(error: BaseException, attempt: int, will_retry: bool) -> None:
            if isinstance(error, KeyRefused):
                return  # not sent (another thread met the refusal meanwhile): no llm_calls row
            self.record("transient_error" if is_transient(error) else "error", error=describe(error))

        try:
            return retrying(
                attempt_once,
                transient=retry,
                delay=lambda error, attempt: retry_delay(error, attempt, self.settings),
                max_retries=self.settings.max_retries,
                on_error=failed,
            )
        except openai.APIConnectionError as error:  # refused, unreachable, timed out (a subclass)
            if breaker is not None:
                breaker.trip(self.settings, error)
            raise


def usage_fields(reply: Reply) -> dict[str, int]:
    """A reply's token counts as LLMCall's keyword arguments."""
    return {
        "prompt_tokens": reply.usage.prompt_tokens,
        "completion_tokens": reply.usage.completion_tokens,
        "reasoning_tokens": reply.usage.reasoning_tokens,
    }
