"""The settings of one `chatmem recall`, read without pydantic when nothing overrides the defaults.

    light_settings(data_dir) -> LightSettings, or None when a CHATMEM_ variable sets something (then the caller
                                reads contracts.settings.Settings, as every other command does)

Importing pydantic-settings and building the settings models costs ~0.3 CPU-s, a third of a whole recall on the
demo. With no CHATMEM_* variable but CHATMEM_DATA_DIR in the environment (names compared as pydantic-settings does,
ignoring case), the settings are the models' defaults and the data dir: those defaults, for the sections a recall
reads (memory, recall, embed, extract), are a copy in memory/recall_defaults.json of
`Settings().model_dump(mode="json")` (written by `python -m memory.recall_settings`; tests/test_recall_settings.py
keeps it equal to the models, so a changed default fails the tests instead of drifting). The objects answer the same
attribute reads as the models (`settings.recall.theta`, `settings.embed.threads`, `model_copy(update=...)`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

DEFAULTS = Path(__file__).with_name("recall_defaults.json")
SECTIONS = ("memory", "recall", "embed", "extract")
DEFAULT_DATA_DIR = Path(".chatmem")  # contracts.settings.DEFAULT_DATA_DIR (a test keeps them equal)
PREFIX = "CHATMEM_"
DATA_DIR_VARIABLE = "CHATMEM_DATA_DIR"


class Section:
    """One settings section as plain attributes (nested sections are Sections too)."""

    def __init__(self, values: dict[str, Any]) -> None:
        for name, value in values.items():
            setattr(self, name, Section(value) if isinstance(value, dict) else value)

    def model_copy(self, update: dict[str, Any] | None = None) -> Section:
        copy = Section({})
        copy.__dict__.update(self.__dict__)
        copy.__dict__.update(update or {})
        return copy

    def __repr__(self) -> str:
        return f"Section({self.__dict__!r})"


class LightSettings(Section):
    """data_dir and the sections a recall reads; archive_path and staging_path as contracts.settings.Settings."""

    data_dir: Path

    @property
    def archive_path(self) -> Path:
        return self.data_dir / "archive.db"

    @property
    def staging_path(self) -> Path:
        return self.data_dir / "staging.db"

    def model_copy(self, update: dict[str, Any] | None = None) -> LightSettings:
        copy = LightSettings({})
        copy.__dict__.update(self.__dict__)
        copy.__dict__.update(update or {})
        return copy


def overridden(environ: dict[str, str] | os._Environ[str]) -> list[str]:
    """The CHATMEM_ variables that set something other than the data dir."""
    return [k for k in environ if k.upper().startswith(PREFIX) and k.upper() != DATA_DIR_VARIABLE]


def light_settings(data_dir: Path | None) -> LightSettings | None:
    """The defaults with this data dir (or CHATMEM_DATA_DIR's, or the default one), or None when any other
    CHATMEM_ variable is set. Secrets in the environment are remembered as Settings() remembers them."""
    if overridden(os.environ):
        return None
    from contracts.redact import remember_environment_secrets

    remember_environment_secrets(os.environ)
    if data_dir is None:
        given = [v for k, v in os.environ.items() if k.upper() == DATA_DIR_VARIABLE]
        data_dir = Path(given[-1]) if given else DEFAULT_DATA_DIR
    defaults = json.loads(DEFAULTS.read_text())
    settings = LightSettings({name: defaults[name] for name in SECTIONS})
    settings.data_dir = data_dir
    recall, memory = getattr(settings, "recall"), getattr(settings, "memory")  # noqa: B009 (set from the JSON)
    recall.key_roles = list(memory.key_roles)  # as Settings does: recall's key roles are memory's
    return settings


def dump_defaults() -> dict[str, Any]:
    """What DEFAULTS must hold: the models' defaults of SECTIONS (with no environment)."""
    from contracts.settings import Settings

    everything = Settings.model_construct().model_dump(mode="json")
    return {name: everything[name] for name in SECTIONS}


if __name__ == "__main__":
    DEFAULTS.write_text(json.dumps(dump_defaults(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {DEFAULTS}")
