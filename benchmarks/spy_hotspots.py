"""Hotspots from a py-spy raw (collapsed stacks) profile: each function's share of the samples. Not a test.

    py-spy record -r 20 -f raw --nonblocking -o concepts.txt --pid PID     # or -- python -m flows.cli ...
    python benchmarks/spy_hotspots.py concepts.txt                          # top 25, chatmem's own code
    python benchmarks/spy_hotspots.py concepts.txt --all --top 40           # library frames too

`incl` is the share of samples in which the function is on the stack (itself or what it calls), `self` the
share in which it is the innermost frame. Idle threads (Prefect's heartbeat and event loops, waiting on a lock
or a socket) are dropped first, so the shares are of the samples where the stage did work.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
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


def hotspots(path: Path, *, top: int, everything: bool) -> list[str]:
    inclusive: Counter[str] = Counter()
    own: Counter[str] = Counter()
    total = 0
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        frames = stack.split(";")
        if any(marker in frames[-1] for marker in IDLE):
            continue
        count = int(count_text)
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Example: python benchmarks/spy_hotspots.py /work/scale/spy100k/concepts.txt --top 30",
    )
    parser.add_argument("profiles", nargs="+", type=Path, help="py-spy `-f raw` outputs")
    parser.add_argument("--top", type=int, default=25, help="functions to list")
    parser.add_argument("--all", action="store_true", help="include library frames, not only chatmem's packages")
    args = parser.parse_args(argv)
    for path in args.profiles:
        print("\n".join(hotspots(path, top=args.top, everything=args.all)))
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
