"""The summary `chatmem run` and `chatmem stage` print when a run ends: one line for a run with nothing new, the
stages that worked with their counts and notes, each file that failed or was cut short; then exit 1 when a file
did not arrive whole, so that a cron job notices (docs/cli.md, the exit codes)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from contracts.errors import ChatmemError, StageError
from flows.cli_data import open_readonly
from flows.cli_table import emit
from flows.hints import with_data_dir
from flows.summary_lines import hidden, shown_counts, shown_notes
from flows.terminal import safe_line

if TYPE_CHECKING:
    from contracts.results import StageResult
    from contracts.settings import Settings
    from flows.cli_app import App


def _format_counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{name.replace('_', ' ')} {value}" for name, value in counts.items())


def _load_counts(counts: dict[str, int]) -> str:
    """The load stage's counts in words (`--json` keeps its keys): what the graph got, and how many of the rows
    compared with what it holds needed nothing; the rest only when not zero."""
    n = {name: int(counts.get(name, 0)) for name in counts}
    parts = [
        f"{n.get('nodes_upserted', 0)} nodes and {n.get('edges_upserted', 0)} edges written (new or changed)",
        f"{n.get('rows_unchanged', 0)} of {n.get('rows_read', 0)} rows compared unchanged",
    ]
    if n.get("nodes_deleted") or n.get("edges_deleted"):
        parts.append(f"{n.get('nodes_deleted', 0)} nodes and {n.get('edges_deleted', 0)} edges deleted")
    if n.get("edges_missing_ends"):
        parts.append(f"{n['edges_missing_ends']} edges missing an end node (retried next load)")
    parts.append(f"{n.get('batches', 0)} batches ({n.get('batches_created', 0)} as CREATE)")
    extra = {"batches_resumed": "batches resumed", "retries": "retries", "layers_missing": "layers missing"}
    parts += [f"{n[name]} {words}" for name, words in extra.items() if n.get(name)]
    return ", ".join(parts)


def print_summary(
    app: App,
    settings: Settings,
    run_id: str,
    results: list[StageResult],
    as_json: bool,
    error: StageError | None = None,
) -> None:
    """The run summary on stdout, text or JSON. On failure the error line goes to stderr (ChatmemGroup).

    A run in which every stage was unchanged is one line; in another run the unchanged stages share one line.
    A file that failed, or was cut short (its complete conversations arrived, the rest is unreadable), makes the
    command exit 1 after the summary, whose first line says so, so that a cron job notices: `_refuse_bad_files`."""
    from staging import inspect as inspection

    with open_readonly(settings.staging_path, settings) as staging:
        files = inspection.run_files(staging, run_id)
        # The ledger's word: re-running one stage of an unfinished run leaves the run failed, with the stages left.
        status, left = inspection.run_status(staging, run_id, "failed" if error else "succeeded")
        worked = inspection.latest_working_run(staging)
    bad = [row for row in files if row["status"] in ("failed", "partial")]
    incomplete = None
    if error is None and not left:  # `incomplete` where a file failed or was cut short: the exit code 1 below
        failed, partial = (sum(row["status"] == s for row in bad) for s in ("failed", "partial"))
        status, incomplete = inspection.shown_run_status(status, failed, partial)
    unchanged = [r.stage for r in results if r.status == "skipped" and any(n.startswith(UNCHANGED) for n in r.notes)]
    nothing_new = bool(results) and len(unchanged) == len(results) and error is None
    defaults = app.defaults(settings, prefect=not nothing_new)
    if as_json:
        data: dict[str, Any] = {
            "run_id": run_id,
            "status": status,
            "nothing_new": nothing_new,
            "stages": [r.model_dump(mode="json") for r in results],
            "files": files,
            "defaults": defaults,
        }
        if incomplete:
            data.update(incomplete=incomplete)
        if error is not None:
            data.update(error=error.cause, failed_stage=error.stage, rerun=error.rerun_hint)
        elif left:
            data.update(error=left)
        emit(data)
        if error is None:
            refuse_bad_files(bad, run_id)
        return
    for line in defaults:
        click.echo(line)
    since = f" since run {worked}" if worked and worked != run_id else ""
    by_run = _done_by(results)
    if len(by_run) > 1:  # the stages' work was done by different runs: name each, newest first
        since = " (" + "; ".join(f"{', '.join(stages)} since run {rid}" for rid, stages in by_run) + ")"
    elif by_run:
        since = f" since run {by_run[0][0]}"
    if nothing_new:
        click.echo(f"nothing new: {len(results)} stage(s) unchanged{since} (run {run_id}; --force recomputes)")
        return
    headline = f" ({safe_line(with_data_dir(left))})" if left and not error else ""
    if incomplete:
        headline = f": {incomplete} (exit code 1)"
    click.echo(f"run {run_id}: {status}{headline}")
    if unchanged:
        # each skipped stage's note names the run that did its work ("unchanged since run R (...)")
        origins = {n.split("(")[0].strip() for r in results if r.stage in unchanged for n in r.notes if UNCHANGED in n}
        said = origins.pop().removeprefix("unchanged ") if len(origins) == 1 else ""
        click.echo(f"  skipped, unchanged{' ' + said if said else ''}: {', '.join(unchanged)}")
    shown_below = tuple(f"{row['path']}:" for row in bad)
    verbose = app.verbose
    more = False  # the default summary left something out: its last line says where it is
    for result in results:
        if result.stage in unchanged:
            continue
        more = more or (not verbose and hidden(result.stage, result.counts, result.notes))
        if result.stage == "load" and "nodes_upserted" in result.counts:
            counts = f"; {_load_counts(result.counts)}"
        else:
            shown = shown_counts(result.stage, result.counts, verbose)
            counts = f"; {_format_counts(shown)}" if shown else ""
        click.echo(f"  {result.stage}: {result.status}{counts}")
        for note in shown_notes(result.notes, verbose):
            if not note.startswith(shown_below):  # a bad file's note: its own line below says it
                click.echo(f"    note: {safe_line(with_data_dir(note))}")  # the garden's `see chatmem staging ...`
        if result.counts.get("quarantined"):
            said = f"{result.counts['quarantined']} record(s) quarantined: chatmem staging failures"
            click.echo(f"    {with_data_dir(said)}")
    more = _file_lines(files, bad, verbose) or more
    if more:
        click.echo("  (every count and note: chatmem --verbose run ..., or run ... --json)")
    if error is None:
        refuse_bad_files(bad, run_id)


FOLD_FILES = 5  # more files than this skipped, or arrived whole beside a bad one: one line for them (not -v)


def _file_lines(files: list[dict[str, Any]], bad: list[dict[str, Any]], verbose: bool) -> bool:
    """The files' lines: each that failed or was cut short; the skipped ones (why), and beside a bad file each that
    arrived whole, one line each up to FOLD_FILES of them, else one line for all (every one with --verbose: the
    real exports' 15 files gave 13 "ingested:" lines under one failure). True when some were folded."""
    skipped = [row for row in files if row["status"] == "skipped"]
    whole = [row for row in files if row["status"] not in ("skipped", "failed", "partial")] if bad else []
    fold_skipped = not verbose and len(skipped) > FOLD_FILES
    fold_whole = not verbose and len(whole) > FOLD_FILES
    for row in files:
        if row["status"] in ("failed", "partial"):
            click.echo(f"  {file_line(row)}")
        elif row["status"] == "skipped" and not fold_skipped:
            why = row["detail"] or "already ingested, same sha256"
            click.echo(f"  skipped ({safe_line(str(why))}): {safe_line(str(row['path']))}")
        elif bad and row["status"] != "skipped" and not fold_whole:  # beside a bad file, the files that arrived whole
            click.echo(f"  ingested: {safe_line(str(row['path']))}: {row['conversations'] or 0} conversation(s)")
    if fold_skipped:
        whys: dict[str, int] = {}
        for row in skipped:
            why = str(row["detail"] or "already ingested, same sha256")
            whys[why] = whys.get(why, 0) + 1
        said = "; ".join(f"{n} {safe_line(why)}" for why, n in whys.items())
        click.echo(f"  skipped {len(skipped)} file(s): {said}")
    if fold_whole:
        conversations = sum(int(row["conversations"] or 0) for row in whole)
        click.echo(f"  ingested whole: the {len(whole)} other file(s), {conversations} conversation(s)")
    return fold_skipped or fold_whole


def _done_by(results: list[StageResult]) -> list[tuple[str, list[str]]]:
    """The runs that did the unchanged stages' work, each with its stages (pipeline order), newest run first:
    read from each skipped stage's note ("unchanged since run R (...)", flows/stage_runner.py)."""
    groups: dict[str, list[str]] = {}
    for result in results:
        for note in result.notes:
            if note.startswith(f"{UNCHANGED} run "):
                groups.setdefault(note.removeprefix(f"{UNCHANGED} run ").split(" ")[0], []).append(result.stage)
                break
    return sorted(groups.items(), key=lambda item: item[0], reverse=True)


UNCHANGED = "unchanged since"  # how the runner's note on a skipped, unchanged stage starts (flows/stage_runner.py)
NO_SUCH_FILE = ": no such file"  # how the ingest stage's detail of a path that does not exist ends (ingest/sources.py)
PARTIAL_NOTE = "partial: "  # how the ingest stage's detail of a file cut short names its problem (ingest/stage.py)


def _files_word(bad: list[dict[str, Any]]) -> str:
    """`1 file cut short`, `2 files failed`, `1 file failed and 1 file cut short` (staging.inspect.files_word)."""
    from staging.inspect import files_word

    return files_word(*(sum(row["status"] == status for row in bad) for status in ("failed", "partial")))


def file_line(row: dict[str, Any]) -> str:
    """One line per bad file: what arrived, what did not, and why."""
    path = str(row["path"])
    detail = str(row["detail"] or "")
    detail = detail.removeprefix(f"{path}: ")  # export errors start with the file name: do not say it twice
    if row["status"] == "partial":
        parts = detail.split("; ")
        problem = "; ".join(p.removeprefix(PARTIAL_NOTE) for p in parts if p.startswith(PARTIAL_NOTE)) or detail
        also = [p for p in parts if not p.startswith(PARTIAL_NOTE)]  # the file's other notes (bytes replaced)
        if also and problem != detail:
            problem += f" (also: {'; '.join(also)})"
        kept = int(row.get("conversations") or 0)
        arrived = f"{kept} complete conversation(s) arrived"
        if not kept and row.get("messages_unchanged"):  # read again (a later run, --force): nothing new before the cut
            arrived = f"nothing new before the cut ({row['messages_unchanged']} message(s) already in the archive)"
        return safe_line(f"cut short: {path}: {arrived}; the rest could not be read: {problem}")
    return safe_line(f"failed: {path}: {detail}")


def cut_short_lines(settings: Settings, result: dict[str, Any]) -> dict[str, str]:
    """Of a `serve --once` tick (its result), each dump cut short: its line as `run` says it (`cut short: PATH: 2
    complete conversation(s) arrived; the rest could not be read: ...`), read from the run's files in the ledger.
    The tick's summary said "partial: PATH" after a raw Prefect warning that gave the why (session 38)."""
    from staging.inspect import run_files

    if not any(row["status"] == "partial" for row in result["ingested"]) or not result["run_id"]:
        return {}
    with open_readonly(settings.staging_path, settings) as staging:
        files = run_files(staging, str(result["run_id"]))
    return {str(row["path"]): file_line(row) for row in files if row["status"] == "partial"}


def _no_export_in(row: dict[str, Any]) -> bool:
    """A failed folder in which no export was found, not an export folder whose conversations.json failed to parse
    (its detail names that file, in the folder): that one has a file to fix, and saying the folder "holds no export
    chatmem can read" contradicted the summary's own "invalid JSON ... at line 1, column 39"."""
    path = str(row["path"])
    return Path(path).is_dir() and f"{path.rstrip('/')}/" not in str(row.get("detail") or "")


def refuse_bad_files(bad: list[dict[str, Any]], run_id: str) -> None:
    """Exit 1 after the summary when a file failed or was cut short (documented in docs/cli.md for cron)."""
    if not bad:
        return
    names = ", ".join(safe_line(str(row["path"])) for row in bad[:3]) + (" ..." if len(bad) > 3 else "")
    alone_folder = len(bad) == 1 and _no_export_in(bad[0])  # its advice below says why
    if len(bad) == 1 and bad[0]["status"] == "failed" and not alone_folder:  # one file: why, too (as the summary)
        why = str(bad[0]["detail"] or "").removeprefix(f"{bad[0]['path']}: ")
        names = safe_line(f"{bad[0]['path']}: {why[:200]}" if why else str(bad[0]["path"]))
    # Said at every run while the file stays as it is (ingest/stage.py reads it again): the damage stands
    failed = [row for row in bad if row["status"] == "failed"]
    # A path given that does not exist (a typo, a file moved) has nothing to fix: it is checked or left out. Said so
    # by the stage (ingest/sources.py); a member of a zip ("x.zip!conversations.json") is no path of its own
    missing = [r for r in failed if str(r["detail"]).endswith(NO_SUCH_FILE) and not Path(str(r["path"])).exists()]
    # A folder in which no export was found: nothing in it to fix, it is the wrong folder (or a typo)
    folders = [r for r in failed if _no_export_in(r)]
    advice = ["run again with the whole file"] if len(failed) < len(bad) else []
    if len(failed) > len(missing) + len(folders):
        advice.append(f"fix the file{'s' if len(failed) - len(missing) - len(folders) > 1 else ''} and run again")
    if folders:
        from flows.export_paths import LOOKED_FOR

        which = "the folder" if len(bad) == 1 else ", ".join(safe_line(str(r["path"])) for r in folders[:3])
        holds = "holds" if len(folders) == 1 else "hold"
        advice.append(
            f"{which} {holds} no export chatmem can read ({LOOKED_FOR}): check the path, or leave it out of the command"
        )
    if len(missing) == 1:
        advice.append(
            f"{'the path' if len(bad) == 1 else safe_line(str(missing[0]['path']))} does not exist: check"
            " it, or leave it out of the command"
        )
    elif missing:
        advice.append(f"{len(missing)} of the paths do not exist: check them, or leave them out of the command")
    fix = "; ".join(advice)
    raise ChatmemError(f"{_files_word(bad)} in run {run_id}: {names}; {fix} (chatmem staging failures lists them)")
