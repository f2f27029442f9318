"""Where chatmem's log lines go: the CLI's one handler on stderr, set up the same way in a stage's own process
(flows/stage_process.py), so that a stage logs alike wherever it runs."""

from __future__ import annotations

import logging
import sys

from flows.prefect_env import OUR_PACKAGES


class CliLogHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever sys.stderr is at the time (click's test runner swaps it per invocation).

    Public name on purpose: Prefect keeps the root handlers it finds unless their class name starts with "_".
    """

    chatmem = True

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stderr
        super().emit(record)


def _below_error(record: logging.LogRecord) -> bool:
    return record.levelno < logging.ERROR


def setup_logging(verbose: bool) -> None:
    """Library modules log through `logging` and own no handlers; the CLI decides where lines go.

    Without --verbose, error records are dropped: every failure reaches the user anyway, once, as the CLI's
    one-line `error:` message with its re-run hint (or as a traceback for a bug), and Prefect would otherwise
    add a traceback of the same StageError for each flow it passed through. Warnings still show.
    """
    from contracts.redact import install_log_redaction

    install_log_redaction()  # every record's message loses URL credentials and known secrets (contracts.redact)
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, "chatmem", False)]:
        root.removeHandler(old)
    handler = CliLogHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    if not verbose:
        handler.addFilter(_below_error)
        handler.setLevel(logging.WARNING)
    root.addHandler(handler)
    root.setLevel(logging.WARNING)  # third-party chatter (httpx logs every request at INFO) stays out
    for package in OUR_PACKAGES:
        # INFO always: Prefect's API handler (PREFECT_LOGGING_EXTRA_LOGGERS) shows it in the UI; the console
        # handler above shows it only with --verbose
        logging.getLogger(package).setLevel(logging.INFO)


def said_by_one_flow(flow_name: str) -> None:
    """In a flow-run process that Prefect's runner started (a `chatmem serve` tick), the console shows what the
    CLI shows for `chatmem run`: warnings, and errors only as the one line `flow_name`'s run says for each.

    There the console is Prefect's own root handler, and every flow a StageError passes through (the stage's,
    the pipeline's) logs it with a traceback, after the stage logged its cause: the flow named here catches the
    error and reports each failure once (each failed dump, a stage that failed), so those other error records
    are dropped from the console. Prefect's API still gets them all (its handler is not the root's). With
    `--verbose` (Prefect's level INFO, inherited from `serve`) nothing is dropped, as for `run --verbose`.
    """
    if logging.getLogger("prefect").getEffectiveLevel() <= logging.INFO:
        return

    def one_line_each(record: logging.LogRecord) -> bool:
        return record.levelno < logging.ERROR or getattr(record, "flow_name", None) == flow_name

    for handler in logging.getLogger().handlers:
        handler.addFilter(one_line_each)


def verbose_now() -> bool | None:
    """The `verbose` the CLI set this process up with (None: not set up by it, e.g. a test or a library call)."""
    ours = [h for h in logging.getLogger().handlers if getattr(h, "chatmem", False)]
    if not ours:
        return None
    return not any(_below_error in h.filters for h in ours)
