"""Contracts: the pydantic models and errors every other package agrees on. Imports nothing of ours."""

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
