"""The code version recorded with every run and stage run."""

from __future__ import annotations

from functools import cache
from importlib import metadata


@cache
def code_version() -> str:
    try:
        return f"chatmem {metadata.version('chatmem')}"
    except metadata.PackageNotFoundError:  # running from a checkout that was not pip-installed
        return "chatmem 0+unknown"
