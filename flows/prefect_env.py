"""Prefect's environment, set before prefect is first imported.

Prefect reads its settings from the environment when it is imported, so these variables have to be in place
before `import prefect`: the CLI calls `configure_prefect` and only then imports `flows.pipeline`. Every value
is a default (`setdefault`): a user who exports a variable keeps it. This module never imports prefect.

What the defaults buy:
- no outbound calls: analytics and tracking off; no `PREFECT_API_URL`, so flows run against an ephemeral
  API on loopback with its SQLite database under `PREFECT_HOME` (next to chatmem's own databases);
- a generous ephemeral start-up timeout: a busy 2-core machine needs more than Prefect's 20 s;
- no result persistence: stage outputs live in staging.db, Prefect only orchestrates;
- quiet logs (WARNING) unless `--verbose`;
- the stage packages' log lines (`logging.getLogger(__name__)`, INFO and up) sent to Prefect's API as the
  logs of the flow run they happen in, so Prefect's UI shows them under each stage's flow run; lines logged
  outside any flow run are not sent (and not warned about).
"""

from __future__ import annotations

import os
from pathlib import Path

# chatmem's packages: one list for the CLI's log levels (flows/cli.py) and Prefect's extra loggers
OUR_PACKAGES = ("contracts", "staging", "clients", "ingest", "extract", "cluster", "load", "garden", "memory", "flows")
# those below flows: they log with the standard library and never import prefect
STAGE_LOGGERS = tuple(package for package in OUR_PACKAGES if package != "flows")

# Set whatever else happens, even by a bare `import flows.pipeline`: they stop outbound calls.
NO_OUTBOUND = {
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
}


def ensure_no_outbound() -> None:
    """Set the no-outbound variables (if unset). Called by the modules that import prefect, before it."""
    for name, value in NO_OUTBOUND.items():
        os.environ.setdefault(name, value)


def prefect_home(data_dir: Path) -> Path:
    """Where Prefect keeps its state for this data dir (unless PREFECT_HOME is already set)."""
    configured = os.environ.get("PREFECT_HOME")
    return Path(configured).expanduser() if configured else (data_dir / "prefect").absolute()


def configure_prefect(data_dir: Path, *, verbose: bool = False) -> dict[str, str]:
    """Set chatmem's Prefect defaults in os.environ and return the values now in effect.

    Must run before prefect is imported in this process; once it is, Prefect has read its settings and later
    changes are ignored (the tests set these variables once per session for that reason).
    """
    ensure_no_outbound()
    home = prefect_home(data_dir)
    defaults = {
        "PREFECT_HOME": str(home),
        # Measured: 2-2.5 min to start at load ~8 on 2 cores (90 s failed a user's run there).
        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "240",
        "PREFECT_RESULTS_PERSIST_BY_DEFAULT": "false",
        # An unsaved default storage block raises when anything is persisted; give it a real path instead.
        "PREFECT_RESULTS_LOCAL_STORAGE_PATH": str(home / "storage"),
        "PREFECT_LOGGING_LEVEL": "INFO" if verbose else "WARNING",
        "PREFECT_LOGGING_EXTRA_LOGGERS": ",".join(STAGE_LOGGERS),
        "PREFECT_LOGGING_TO_API_WHEN_MISSING_FLOW": "ignore",
    }
    if not os.environ.get("PREFECT_API_URL"):
        # The profile shipped with prefect enables this too, but a user's own profiles.toml might not.
        defaults["PREFECT_SERVER_EPHEMERAL_ENABLED"] = "true"
    for name, value in defaults.items():
        os.environ.setdefault(name, value)
    # Prefect creates its home without parents and, when that fails, its server cannot open its database
    # and the start-up times out after a long wait: create it (and a fresh data dir) here.
    Path(os.environ["PREFECT_HOME"]).expanduser().mkdir(parents=True, exist_ok=True)
    names = [*NO_OUTBOUND, *defaults, "PREFECT_API_URL"]
    return {name: os.environ[name] for name in names if os.environ.get(name)}


def describe_api(*, serving: bool = False) -> str:
    """One line for the defaults announcement: which Prefect API the flows will talk to."""
    url = os.environ.get("PREFECT_API_URL")
    if url:
        return f"Prefect API {url} (PREFECT_API_URL)"
    home = os.environ.get("PREFECT_HOME", "~/.prefect")
    if serving:  # the ephemeral API has no scheduler: serve starts a server of its own
        return f"Prefect: a local server on 127.0.0.1, state in {home} (set PREFECT_API_URL to use yours)"
    return f"Prefect: local ephemeral API, state in {home} (set PREFECT_API_URL to use a server)"
