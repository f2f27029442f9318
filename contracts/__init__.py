"""Contracts: the pydantic models and errors every other package agrees on. Imports nothing of ours.

The names below load on first use (PEP 562): `import contracts.errors` (the CLI's error tree) must not pay for
pydantic and every model, so that `chatmem --help` and a usage error answer at once.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from contracts.base import StrictBase
    from contracts.errors import (
        ChatmemError,
        ConfigError,
        ExportError,
        MalformedExportError,
        StageError,
        UnsafeArchiveError,
        UnsupportedFormatError,
    )
    from contracts.records import (
        ExportConversation,
        ExportMessage,
        ExportSource,
        QuarantineRecord,
    )

_WHERE = {
    "StrictBase": "contracts.base",
    "ChatmemError": "contracts.errors",
    "ConfigError": "contracts.errors",
    "ExportError": "contracts.errors",
    "MalformedExportError": "contracts.errors",
    "StageError": "contracts.errors",
    "UnsafeArchiveError": "contracts.errors",
    "UnsupportedFormatError": "contracts.errors",
    "ExportConversation": "contracts.records",
    "ExportMessage": "contracts.records",
    "ExportSource": "contracts.records",
    "QuarantineRecord": "contracts.records",
}

__all__ = [
    "ChatmemError",
    "ConfigError",
    "ExportConversation",
    "ExportError",
    "ExportMessage",
    "ExportSource",
    "MalformedExportError",
    "QuarantineRecord",
    "StageError",
    "StrictBase",
    "UnsafeArchiveError",
    "UnsupportedFormatError",
]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'contracts' has no attribute {name!r}")
    return getattr(importlib.import_module(_WHERE[name]), name)
