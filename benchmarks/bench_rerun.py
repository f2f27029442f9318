"""What a re-run costs: `chatmem run` on the demo export twice in a fresh data dir, as a user runs it. Not a test.

    python benchmarks/bench_rerun.py                 # demo/longmemeval-demo.zip, writes its RESULTS.md section
    python benchmarks/bench_rerun.py --export X.zip  # any export; --no-results to only print

Each run is the real CLI in a new process (`python -m flows.cli --data-dir D run EXPORT --json`), process
start-up included. Per stage: status and seconds from the ledger (stage_runs.duration_s); per run: the wall
time of the whole process. The graph load uses the local server (started by the first run, reused by the
second, stopped at the end). The second run should do no stage work: every stage skipped as unchanged, so its
wall time is start-up (Python imports, Prefect's ephemeral API) plus reading the fingerprints.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEMO = ROOT / "demo" / "longmemeval-demo.zip"
HEADING = "# Re-run cost: the demo export twice through `chatmem run`"


def cli(data_dir: Path, *args: str) -> tuple[float, dict[str, Any]]:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "flows.cli", "--data-dir", str(data_dir), "-q", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"chatmem {' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return wall, json.loads(done.stdout)


def stage_rows(data_dir: Path, run_id: str) -> list[tuple[str, str, float]]:
    conn = sqlite3.connect(data_dir / "staging.db")
    rows = conn.execute("SELECT stage, status, duration_s FROM stage_runs WHERE run_id = ? ORDER BY id", (run_id,))
    found = [(str(stage), str(status), float(seconds or 0.0)) for stage, status, seconds in rows]
    conn.close()
    return found


def machine() -> str:
    lines = Path("/proc/cpuinfo").read_text().splitlines()
    cpu = next((line.split(":", 1)[1].strip() for line in lines if "model name" in line), platform.processor())
    return f"{os.cpu_count()} cores ({cpu}), Python {platform.python_version()}, {platform.system()}"


def report(export: Path, runs: list[tuple[float, str, list[tuple[str, str, float]]]]) -> str:
    (wall1, _, first), (wall2, _, second) = runs
    lines = [
        HEADING,
        "",
        f"`python benchmarks/bench_rerun.py` on {export.name}; {machine()}; a shared machine, so read the times as",
        "upper bounds. Stage seconds from `stage_runs.duration_s`; run wall time of the whole CLI process.",
        "",
        "| stage | first run | s | second run | s |",
        "|---|---|---:|---|---:|",
    ]
    by_stage = {stage: (status, seconds) for stage, status, seconds in second}
    for stage, status, seconds in first:
        again, again_s = by_stage.get(stage, ("-", 0.0))
        lines.append(f"| {stage} | {status} | {seconds:.1f} | {again} | {again_s:.2f} |")
    stage_total = (sum(s for *_, s in first), sum(s for *_, s in second))
    lines += [
        f"| **all stages** | | {stage_total[0]:.1f} | | {stage_total[1]:.2f} |",
        f"| **process wall time** | | {wall1:.1f} | | {wall2:.1f} |",
        "",
        f"The second run is {wall2 / wall1:.1%} of the first's wall time; its stages took {stage_total[1]:.2f} s in",
        "all (fingerprints read, skip rows written), the rest is start-up.",
        "",
    ]
    return "\n".join(lines)


def write_section(path: Path, section: str) -> None:
    """Replace this benchmark's section of RESULTS.md (its heading to the next top-level heading), or append it."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    start = text.find(HEADING)
    if start < 0:
        path.write_text(text.rstrip() + "\n\n" + section, encoding="utf-8")
        return
    end = text.find("\n# ", start + len(HEADING))
    rest = text[end + 1 :] if end >= 0 else ""
    path.write_text(text[:start] + section + ("\n" + rest if rest else ""), encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--export", type=Path, default=DEMO)
    parser.add_argument("--no-results", action="store_true", help="print only; leave RESULTS.md alone")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-rerun-") as tmp:
        data_dir = Path(tmp) / "data"
        runs = []
        try:
            for _ in range(2):
                wall, summary = cli(data_dir, "run", str(args.export.absolute()), "--json")
                runs.append((wall, summary["run_id"], stage_rows(data_dir, summary["run_id"])))
                print(f"run {summary['run_id']}: {wall:.1f} s", file=sys.stderr)
        finally:
            subprocess.run([sys.executable, "-m", "flows.cli", "--data-dir", str(data_dir), "graph", "down"], cwd=ROOT)
    text = report(args.export, runs)
    print(text)
    if not args.no_results:
        write_section(HERE / "RESULTS.md", text)


if __name__ == "__main__":
    main()
