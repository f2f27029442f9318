"""The one place secrets are removed before anything is written: tables, logs, exception texts.

Two kinds of secret reach chatmem: credentials written into an endpoint URL (`https://user:token@host/v1`,
`bolt://neo4j:pw@host`) and values of secret fields (API keys, passwords). Every writer passes what it writes
through here:

    redact_text(text)      a string with URL credentials cut out and every known secret value masked
    redact(value)          the same over JSON-like data; values of secret-named keys masked whatever they are
    redact_uri(uri)        one URI without its user:password@ part
    remember_secret(value) a secret value that must be masked wherever it turns up (Settings call it)
    remember_environment_secrets(environ)  the secrets other libraries read from the environment themselves
                           (OPENAI_API_KEY, NEO4J_PASSWORD, credentials in OPENAI_BASE_URL / NEO4J_URI)
    known_secrets()        the values remembered so far (a writer that masks in bulk, like the exports)
    install_log_redaction() every log record's message goes through redact_text (the CLI installs it)

Masking known values is what catches a secret that arrives inside someone else's text (a server that echoes
the key in its 401 body, a library exception that prints the URL): a pattern alone cannot know an API key.

A third kind arrives in the chats themselves: a key the user pasted into a message. chatmem cannot know it, but
the well-known shapes (SECRET_SHAPES: OpenAI and Anthropic keys, AWS access key ids, GitHub, Slack and Google
tokens, bearer tokens, PEM private key blocks) are masked by mask_secret_shapes, which redact_text applies too:
nothing chatmem writes outside the archive (staged LLM requests and replies, logs, errors) and no prompt it sends
to an LLM holds one. The archive keeps the messages verbatim: it is the user's own copy of their export.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

MASK = "***"
SECRET_KEYS = frozenset({"api_key", "password", "token", "secret", "authorization", "access_token"})
MIN_SECRET_CHARS = 4  # shorter values would mask ordinary words; no real key or password is that short

# scheme://userinfo@ — userinfo is anything up to the first '@' that has no '/', whitespace or quote before it.
URL_CREDENTIALS_PATTERN = r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.\-]*://)[^/\s@'\"<>]+@"
_URL_CREDENTIALS = re.compile(URL_CREDENTIALS_PATTERN)

# Well-known secret shapes, each replaced by its kept prefix + ***. No secret scanner is a dependency, and these
# few shapes are documented by their issuers; the length floors keep ordinary words ("sk-learn") out.
SECRET_SHAPES: tuple[tuple[str, re.Pattern[str]], ...] = (
    # OpenAI (sk-..., sk-proj-..., sk-svcacct-...) and Anthropic (sk-ant-...) API keys
    # (20+ characters with a digit: "sk-learn-compatible" is a word, every issued key has digits)
    ("openai/anthropic key", re.compile(r"(?<![A-Za-z0-9_-])(sk-)(?=[A-Za-z0-9_-]*[0-9])[A-Za-z0-9_-]{20,}")),
    ("aws access key id", re.compile(r"\b()(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("github token", re.compile(r"\b(gh[pousr]_|github_pat_)[A-Za-z0-9_]{20,}")),
    ("slack token", re.compile(r"\b(xox[abposre]-)[A-Za-z0-9-]{10,}")),
    ("google api key", re.compile(r"\b(AIza)[0-9A-Za-z_-]{30,}")),
    ("bearer token", re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]{16,}")),
    (
        "pem private key",
        re.compile(r"(-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----).*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)", re.S),
    ),
)


def mask_secret_shapes(text: str) -> str:
    """`text` with every well-known secret shape (SECRET_SHAPES) cut to its prefix + *** ("sk-***", "Bearer ***")."""
    if not text:
        return text
    for _, pattern in SECRET_SHAPES:
        text = pattern.sub(lambda m: m.group(1) + MASK, text)
    return text


_known: set[str] = set()
_lock = threading.Lock()


def remember_secret(value: str | None) -> None:
    """Mask `value` from now on wherever redact_text sees it (idempotent; short values are ignored)."""
    if value and len(value) >= MIN_SECRET_CHARS:
        with _lock:
            _known.add(value)


ENV_SECRETS = ("OPENAI_API_KEY", "NEO4J_PASSWORD", "OPENAI_ADMIN_KEY")
"""Variables holding a secret that chatmem or a library it calls may send: remembered whoever reads them."""
ENV_SECRET_URIS = ("OPENAI_BASE_URL", "NEO4J_URI", "CHATMEM_RUNNER__DASK_ADDRESS")
"""Variables holding a URL whose user:password@ part is a secret."""


def remember_environment_secrets(environ: Mapping[str, str]) -> None:
    """Remember the secrets of `environ` that reach a request without passing through a settings field: a key
    given only as OPENAI_API_KEY is as secret as CHATMEM_EXTRACT__LLM__API_KEY."""
    for name in ENV_SECRETS:
        remember_secret(environ.get(name))
    for name in ENV_SECRET_URIS:
        remember_uri_secrets(environ.get(name))


def known_secrets() -> list[str]:
    """Every remembered secret, longest first (a token that contains another is masked whole)."""
    with _lock:
        return sorted(_known, key=len, reverse=True)


def remember_uri_secrets(uri: str | None) -> None:
    """Remember the user and password written into `uri`, if any."""
    if not uri:
        return
    try:
        parts = urlsplit(uri)
        password, user = parts.password, parts.username
    except ValueError:
        return
    # user:password@ -> the password; token@ (no password) -> the user part is the token itself
    remember_secret(password if password else user)


def redact_uri(uri: str | None) -> str | None:
    """The URI without a user:password@ part (a password written into NEO4J_URI stays out of the ledger)."""
    if uri is None:
        return None
    try:
        parts = urlsplit(uri)
        user, password = parts.username, parts.password
    except ValueError:
        return redact_text(uri)
    if user is None and password is None:
        return uri
    netloc = f"{parts.hostname or ''}:{parts.port}" if parts.port else parts.hostname or ""
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def redact_text(text: str) -> str:
    """`text` with URL credentials cut out, every remembered secret and every well-known secret shape masked."""
    if not text:
        return text
    cleaned = _URL_CREDENTIALS.sub(r"\g<scheme>", text)
    for secret in known_secrets():
        if secret in cleaned:
            cleaned = cleaned.replace(secret, MASK)
    # the shapes last: a configured key reads *** whole (not "sk-***"), as it always did
    return mask_secret_shapes(cleaned)


def redact(value: Any) -> Any:
    """JSON-like data with every string redacted and the values of secret-named keys masked."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, Mapping):
        return {
            key: (MASK if value is not None and str(key).lower() in SECRET_KEYS else redact(item))
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact(item) for item in value]
    return value


class _RedactingRecordFactory:
    """Wraps the log record factory: the formatted message is redacted once, when the record is made."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __call__(self, *args: Any, **kwargs: Any) -> logging.LogRecord:
        record: logging.LogRecord = self.inner(*args, **kwargs)
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: leave it for the handler to report, as logging does
            return record
        redacted = redact_text(message)
        if redacted != message or record.args:
            record.msg, record.args = redacted, None
        if record.exc_info and not record.exc_text:  # the traceback text, cached where Formatter looks for it
            record.exc_text = redact_text(logging.Formatter().formatException(record.exc_info))
        return record


def install_log_redaction() -> None:
    """Every log record made from now on (chatmem's, Prefect's, httpx's) carries a redacted message."""
    factory = logging.getLogRecordFactory()
    if not isinstance(factory, _RedactingRecordFactory):
        logging.setLogRecordFactory(_RedactingRecordFactory(factory))
