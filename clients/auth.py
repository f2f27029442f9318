"""Which credential an OpenAI-compatible endpoint (the LLM, the embeddings) is sent.

The API key (the configured one, else OPENAI_API_KEY) as `Authorization: Bearer`, whenever there is one. With no
key, the user:password@ written into the base URL as Basic auth, for a proxy that accepts only that. The URL
itself is always sent without them (httpx would otherwise turn them into a Basic header behind our back).
"""

from __future__ import annotations

import base64
from urllib.parse import unquote, urlsplit

from contracts.redact import remember_secret


def basic_auth(url: str | None) -> dict[str, str]:
    """`{"Authorization": "Basic ..."}` from the user:password@ of `url`, or {} when it has none. The encoded
    value is remembered as a secret too: a server that quotes the header finds it masked."""
    if not url:
        return {}
    try:
        parts = urlsplit(url)
        user, password = parts.username, parts.password
    except ValueError:
        return {}
    if user is None and password is None:
        return {}
    pair = f"{unquote(user or '')}:{unquote(password or '')}"
    token = base64.b64encode(pair.encode()).decode()
    remember_secret(token)
    remember_secret(pair)
    return {"Authorization": f"Basic {token}"}
