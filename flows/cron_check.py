"""Is `chatmem serve --cron EXPR` a cron expression Prefect accepts? Checked before Prefect is imported.

Importing prefect creates its home folder (DATA_DIR/prefect, set by flows/prefect_env.py), and `serve` must
refuse a bad --cron having created nothing. Prefect checks a cron with the croniter it vendors
(prefect/_vendor/croniter, in `prefect._internal.schemas.validators.validate_cron_string`); that one module is
loaded here from its file, without the prefect package around it, so that the answer is Prefect's own. Where it
cannot be found (another Prefect layout), nothing is checked here and `flows.serve.check_schedule` refuses the
expression after Prefect's import, as before.
"""

from __future__ import annotations

import importlib.util
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType

from contracts.errors import ConfigError

_VENDORED = ("_vendor", "croniter", "croniter.py")


def check_cron(cron: str) -> None:
    """ConfigError (exit 2) for an expression Prefect would refuse: croniter's, and no random or hashed fields
    (`R`, `H`), which Prefect does not support. Also refused, though croniter takes them: a sixth (seconds) or
    seventh (years) field, since a schedule of runs every second floods Prefect's database with late runs, each
    one a traceback ("* * * * * *"); and a date that never comes ("0 0 31 2 *"), a schedule that never runs."""
    fields = cron.split()
    if len(fields) > 5:
        raise ConfigError(
            f"--cron {cron!r} has {len(fields)} fields: give 5 (minute hour day-of-month month day-of-week),"
            " e.g. '*/30 * * * *'; a run at most once a minute"
        )
    croniter = _croniter()
    if croniter is None:
        return
    if not croniter.croniter.is_valid(cron) or any(field.casefold() in ("r", "h") for field in fields):
        raise ConfigError(f"--cron {cron!r} is not a valid cron expression")
    try:
        croniter.croniter(cron, datetime.now(UTC)).get_next(datetime)
    except croniter.CroniterBadDateError:
        raise ConfigError(f"--cron {cron!r} never fires: no such date (e.g. 31 February)") from None


def _croniter() -> ModuleType | None:
    """Prefect's vendored croniter module, loaded from its file (the prefect package is not imported)."""
    spec = importlib.util.find_spec("prefect")  # a top-level package's spec imports nothing
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations)), *_VENDORED)
    if not path.is_file():
        return None
    loader = importlib.util.spec_from_file_location("chatmem_cron_check_croniter", path)
    if loader is None or loader.loader is None:
        return None
    module = importlib.util.module_from_spec(loader)
    try:
        loader.loader.exec_module(module)
    except Exception:  # another layout or version: Prefect's own check still runs later
        return None
    return module if hasattr(module, "croniter") else None
