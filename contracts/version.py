"""The code version recorded with every run and stage run."""

from __future__ import annotations

from functools import cache


@cache
def code_version() -> str:
    from importlib import metadata  # on first use: importing it costs every command ~0.05-0.1 s

    try:
        return f"chatmem {metadata.version('chatmem')}"
    except metadata.PackageNotFoundError:  # running from a checkout that was not pip-installed
        return "chatmem 0+unknown"
