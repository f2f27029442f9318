"""A file cut short made moot by a whole re-export read later under another path.

A download stopped halfway (`conversations.json`, cut short) is read: its complete conversations arrive, the rest is
quarantined, and `chatmem staging failures` lists the file until the same path is read whole. A user who downloads
the export again gets another name (`conversations (1).json`, a new zip): read whole, it holds every conversation the
cut file held, and more. The cut file then needs nothing: the run that reads the whole one records it as
`skipped`, "superseded by PATH", so `staging failures` leaves it out (its latest outcome is no longer partial) and
the run's summary says so once.

Supersedes: one file of this run read whole (not cut, not failed) that delivered every conversation the cut file
delivered (by conversation id: a re-export's bytes differ, its ids do not), the cut file's latest outcome still
being partial with the same bytes, and not given in this run (a file given now is said as it is now). The cut
file's conversations are read before the stage writes: one the whole file rewrites takes its source id.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping

from staging.ingest_files import SUPERSEDED, latest_for_path


def superseded(
    staging: sqlite3.Connection,
    cut_before: Mapping[str, tuple[str, set[str]]],
    whole: Iterable[tuple[str, set[str]]],
    given: set[str],
) -> list[tuple[str, str]]:
    """(path, detail) of each file cut short (`cut_before`: sha256 -> (path, its conversations), read before this
    stage wrote) that one of this run's whole files (`whole`: (path, the conversations it delivered)) supersedes."""
    wholes = [(path, seen) for path, seen in whole if seen]
    found: list[tuple[str, str]] = []
    for sha256, (path, held) in cut_before.items():
        if path in given or not held:
            continue
        latest = latest_for_path(staging, path)
        if latest is None or latest["status"] != "partial" or latest["sha256"] != sha256:
            continue  # read whole since, or other bytes there now: its own outcome stands
        by = next((other for other, seen in wholes if held <= seen), None)
        if by is not None:
            found.append((path, f"{SUPERSEDED}{by}: every conversation it held ({len(held)}) arrived whole from there"))
    return found
