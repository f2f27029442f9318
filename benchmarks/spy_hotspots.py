"""Hotspots from a py-spy raw (collapsed stacks) profile: each function's share of the samples. Not a test.

    py-spy record -r 20 -f raw --nonblocking -o concepts.txt --pid PID     # or -- python -m flows.cli ...
    python benchmarks/spy_hotspots.py concepts.txt                          # top 25, chatmem's own code
    python benchmarks/spy_hotspots.py concepts.txt --all --top 40           # library frames too
    py-spy record -r 50 -f raw --subprocesses --nonblocking -o day.txt --pid PID   # a whole `chatmem serve --once`
    python benchmarks/spy_hotspots.py day.txt --split                      # seconds per stage and outside them

`incl` is the share of samples in which the function is on the stack (itself or what it calls), `self` the
share in which it is the innermost frame. Idle threads (Prefect's heartbeat and event loops, waiting on a lock
or a socket) are dropped first, so the shares are of the samples where the stage did work.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

PACKAGES = ("contracts", "staging", "clients", "ingest", "extract", "cluster", "load", "garden", "memory", "flows")
FRAME = re.compile(r"^(?P<func>.*) \((?P<file>[^():]+):(?P<line>\d+)\)$")
IDLE = ("wait (threading.py", "select (selectors.py", "_worker (concurrent", "run_forever (asyncio", "sleep (")


def _frame(raw: str) -> tuple[str, str]:
    """(function, file) of one frame, e.g. ('resolve', 'extract/resolve.py')."""
    match = FRAME.match(raw.strip())
    return (match["func"], match["file"]) if match else (raw.strip(), "")


def _ours(path: str) -> bool:
    return path.split("/", 1)[0] in PACKAGES and "site-packages" not in path


def _samples(path: Path) -> Iterator[tuple[str, list[str], int]]:
    """py-spy's raw (folded) lines: each stack, its frames (outermost first) and its sample count."""
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        stack, _, count_text = line.rpartition(" ")
        if stack and count_text.isdigit():
            yield stack, stack.split(";"), int(count_text)


def hotspots(path: Path, *, top: int, everything: bool) -> list[str]:
    inclusive: Counter[str] = Counter()
    own: Counter[str] = Counter()
    total = 0
    for _, frames, count in _samples(path):
        if any(marker in frames[-1] for marker in IDLE):
            continue
        total += count
        names = []
        for raw in frames:
            func, file = _frame(raw)
            if everything or _ours(file):
                names.append(f"{file}:{func}")
        for name in set(names):
            inclusive[name] += count
        func, file = _frame(frames[-1])
        own[f"{file}:{func}"] += count
    if total == 0:
        return [f"{path}: no busy samples"]
    out = [f"{path}: {total} busy samples", f"{'incl':>6} {'self':>6}  function"]
    for name, count in inclusive.most_common(top):
        out.append(f"{100 * count / total:5.1f}% {100 * own[name] / total:5.1f}%  {name}")
    out.append("innermost frames (any code):")
    for name, count in own.most_common(min(top, 12)):
        out.append(f"{'':6} {100 * count / total:5.1f}%  {name}")
    return out


STAGE_RUN = re.compile(r"^run \((\w+/stage\w*\.py):\d+\)$")


def split(path: Path, rate: float) -> list[str]:
    """Where a whole process's samples went (every sample, seconds at `rate` Hz): each stage (the stage module's
    `run` under the runner's `execute`), the recall index stored on its thread, Prefect's API server (a subprocess
    of the command), imports outside the stages, and the rest by the innermost frame of chatmem's own code."""
    parts: Counter[str] = Counter()
    total = 0
    for stack, frames, count in _samples(path):
        total += count
        if "server_guard" in stack or "uvicorn" in stack:
            part = "Prefect API server (subprocess)"
        elif "RecallIndexBuild._build" in stack:
            part = "recall index (thread)"
        elif "execute (flows/stage_runner.py" in stack:
            runs = [m[1] for f in frames if (m := STAGE_RUN.match(f.strip()))]
            part = f"stage {runs[0]}" if runs else "runner, in execute"
        elif "_find_and_load" in stack:
            part = "imports outside the stages"
        else:
            ours = [f"{file}:{func}" for func, file in map(_frame, frames) if _ours(file)]
            part = f"other: {ours[-1] if ours else _frame(frames[-1])[0]}"
        parts[part] += count
    out = [f"{path}: {total} samples = {total / rate:.1f} s at {rate:g} Hz (all threads and processes)"]
    for part, count in parts.most_common():
        out.append(f"{count / rate:7.1f} s {100 * count / total:5.1f}%  {part}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Example: python benchmarks/spy_hotspots.py /work/scale/spy100k/concepts.txt --top 30",
    )
    parser.add_argument("profiles", nargs="+", type=Path, help="py-spy `-f raw` outputs")
    parser.add_argument("--top", type=int, default=25, help="functions to list")
    parser.add_argument("--all", action="store_true", help="include library frames, not only chatmem's packages")
    parser.add_argument("--split", action="store_true", help="seconds per stage and outside the stages (a day)")
    parser.add_argument("--rate", type=float, default=50.0, help="the sampling rate of --split's profile (-r)")
    args = parser.parse_args(argv)
    for path in args.profiles:
        found = split(path, args.rate) if args.split else hotspots(path, top=args.top, everything=args.all)
        print("\n".join(found[: args.top + 1] if args.split else found))
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
