"""Whole-process times of the everyday commands (issue 21), against `python -c pass` measured in the same run.
Not a test.

    python benchmarks/bench_cli.py --data-dir D --export demo/longmemeval-demo.zip   # D: a built data dir;
                                           # rewrites this benchmark's section of benchmarks/RESULTS.md
    python benchmarks/bench_cli.py --data-dir D --export X --runs 7 --no-results     # only print

Each command is started as a user starts it (`chatmem ...`, the console script of this environment; else
`python -m flows.cli`), RUNS times after one warm-up run, in turn with the baseline (A B A B ...), so a machine
that slows down during the call slows both. Per command: median and max wall seconds, median CPU seconds (user +
system of the finished children, from getrusage), and the median over pairs of the command minus its baseline
run. The data dir must hold a built memory (a `chatmem run` of the export into it): `recall` then opens its
stored index and `run` of the same export has nothing to do. The commands:

    --help                    the top-level help
    usage error               `chatmem recall` without its question (exit 2)
    run --help                a command's help
    recall                    one question against the stored recall index (no pipeline import)
    graph status              which graph the load writes to; is the local server up
    staging runs              the ledger
    run (nothing new)         `chatmem run EXPORT` once everything is built: every stage unchanged
    run (bad file)            `chatmem run EMPTY_FILE`: refused before Prefect starts (exit 1)
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
HEADING = "# Everyday commands: whole-process times (benchmarks/bench_cli.py)"
# As installed: Python writes and reuses its bytecode cache (a shell that sets PYTHONDONTWRITEBYTECODE makes every
# command compile chatmem's sources again, ~0.2 s each on 2 busy cores).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
TARGETS = {  # issue 21: upper bounds on the median wall time, seconds
    "--help": 0.3,
    "usage error": 0.3,
    "run --help": 0.3,
    "recall": 0.8,
    "graph status": 1.0,
    "run (nothing new)": 8.0,
}


def chatmem() -> list[str]:
    script = Path(sys.executable).with_name("chatmem")
    return [str(script)] if script.exists() else [sys.executable, "-m", "flows.cli"]


def once(command: list[str]) -> tuple[float, float, int]:
    """(wall s, CPU s of the children it waited for, exit code) of one start of `command`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=ENV, stdin=subprocess.DEVNULL, capture_output=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.returncode


def measure(command: list[str], baseline: list[str], runs: int) -> dict[str, float | int]:
    once(command)  # warm-up: the page cache, Python's bytecode cache
    walls, cpus, deltas, codes = [], [], [], set()
    for _ in range(runs):
        wall, cpu, code = once(command)
        base, _, _ = once(baseline)
        walls.append(wall)
        cpus.append(cpu)
        deltas.append(wall - base)
        codes.add(code)
    return {
        "median": statistics.median(walls),
        "max": max(walls),
        "cpu": statistics.median(cpus),
        "over_baseline": statistics.median(deltas),
        "exit": max(codes),
    }


def commands(data_dir: Path, export: Path, empty: Path) -> dict[str, list[str]]:
    base = [*chatmem(), "--data-dir", str(data_dir)]
    return {
        "--help": [*chatmem(), "--help"],
        "usage error": [*base, "recall"],
        "run --help": [*chatmem(), "run", "--help"],
        "recall": [*base, "recall", "what did I buy for my sister's birthday?"],
        "graph status": [*base, "graph", "status"],
        "staging runs": [*base, "staging", "runs", "--limit", "5"],
        "run (nothing new)": [*base, "-q", "run", str(export)],
        "run (bad file)": [*base, "-q", "run", str(empty)],
    }


def table(rows: dict[str, dict[str, float | int]], baseline: dict[str, float | int]) -> list[str]:
    lines = [
        "| command | median wall s | max wall s | median CPU s | median over baseline s | exit | target |",
        "|---|---:|---:|---:|---:|---:|---|",
        f"| `python -c pass` (baseline) | {baseline['median']:.3f} | {baseline['max']:.3f} | {baseline['cpu']:.3f}"
        " | - | 0 | |",
    ]
    for name, row in rows.items():
        target = TARGETS.get(name)
        verdict = "" if target is None else f"≤ {target} s: {'met' if row['median'] <= target else 'MISSED'}"
        lines.append(
            f"| {name} | {row['median']:.3f} | {row['max']:.3f} | {row['cpu']:.3f} | {row['over_baseline']:.3f}"
            f" | {row['exit']} | {verdict} |"
        )
    return lines


def write_results(lines: list[str]) -> None:
    """Replace this benchmark's section of benchmarks/RESULTS.md (or add it at the end)."""
    results = HERE / "RESULTS.md"
    text = results.read_text() if results.exists() else ""
    start = text.find(HEADING)
    section = "\n".join([HEADING, "", *lines, "", ""])
    if start < 0:
        text = text.rstrip("\n") + "\n\n" + section
    else:
        end = text.find("\n# ", start + len(HEADING))
        text = text[:start] + section + (text[end + 1 :] if end >= 0 else "")
    results.write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, required=True, help="A data dir with the export built into it.")
    parser.add_argument("--export", type=Path, default=ROOT / "demo" / "longmemeval-demo.zip")
    parser.add_argument("--runs", type=int, default=7, help="Runs per command (after one warm-up run).")
    parser.add_argument("--only", action="append", help="Only these commands (repeatable).")
    parser.add_argument("--no-results", action="store_true", help="Print only; leave RESULTS.md alone.")
    args = parser.parse_args()
    if not (args.data_dir / "staging.db").exists():
        raise SystemExit(f"{args.data_dir} holds no staging.db: build it first with chatmem run {args.export}")
    load = os.getloadavg()
    work = Path(tempfile.mkdtemp(prefix="bench-cli-"))
    try:
        empty = work / "empty.json"
        empty.write_bytes(b"")
        baseline_command = [sys.executable, "-c", "pass"]
        chosen = commands(args.data_dir, args.export, empty)
        if args.only:
            chosen = {k: v for k, v in chosen.items() if k in args.only}
        rows = {name: measure(command, baseline_command, args.runs) for name, command in chosen.items()}
        baseline = measure(baseline_command, baseline_command, args.runs)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    load_after = os.getloadavg()
    lines = [
        f"`python benchmarks/bench_cli.py --data-dir D --export {args.export} --runs {args.runs}`, where D holds"
        f" the export built by `chatmem run`; {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} cores,"
        f" Python {platform.python_version()}; load average {load[0]:.1f} before, {load_after[0]:.1f} after"
        " (a shared machine: read the wall times as upper bounds, the CPU seconds as the steadier figure);"
        " bytecode cache on (PYTHONDONTWRITEBYTECODE unset for the commands).",
        f"Each command {args.runs} times after one warm-up run, in turn with `python -c pass`; `over baseline` is"
        " the median over pairs of the command's wall time minus the baseline's.",
        "",
        *table(rows, baseline),
    ]
    print("\n".join(lines))
    if not args.no_results:
        write_results(lines)


if __name__ == "__main__":
    main()
