"""The whole pipeline at scale through the real CLI: each stage in its own process, wall time and peak RSS. Not a test.

    python benchmarks/bench_scale.py --export /work/scale/chatgpt-real-100k-seed1.json \
        --new-dump /work/scale/chatgpt-real-new1k-seed2.json        # writes benchmarks/out/scale-100k.json
    python benchmarks/bench_scale.py --write                        # RESULTS.md section from every scale-*.json

A fresh data dir, offline defaults. `chatmem run EXPORT --only ingest` starts the run; every later stage is
`chatmem run --run-id R --only STAGE` in a new process, so each stage gets its own wall time (process start-up
included) and peak RSS: `peak_rss` is the stage process's own maximum resident set (os.wait4's ru_maxrss, the
largest of the process and its waited-for children); `tree_rss` is the largest sum over the process and all its
descendants sampled every 0.25 s (the local graph server started by load counts there). `stage_s` is the time
inside the stage from staging.db's stage_runs. Then the incremental case: `chatmem run NEW_DUMP` (all stages in
one process) over the same data dir, with each stage's time from stage_runs. The JSON is rewritten after every
stage, so a run cut short (a 1M run under nohup) keeps what it measured; sizes measured in different invocations
merge into one table with --write. `--spy DIR` profiles every stage process with py-spy (DIR/STAGE.txt; read
them with benchmarks/spy_hotspots.py).

Continue a run cut short (same data dir, same run id; finished stages are kept as measured):
    python benchmarks/bench_scale.py --resume --keep --data-dir /work/scale/bench-1m \
        --out /work/scale/out/scale-1m.json --new-dump /work/scale/chatgpt-real-new1k-seed2.json

Unattended 1M:
    nohup nice -n 10 python benchmarks/bench_scale.py --export /work/scale/chatgpt-real-1m-seed1.json \
        --new-dump /work/scale/chatgpt-real-new1k-seed2.json > /work/scale/logs/bench-1m.log 2>&1 &
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "out"
STAGES = ("segment", "embed", "extract", "concepts", "garden", "embed_concepts", "cluster", "cues", "load")
BEGIN, END = "<!-- scale:begin -->", "<!-- scale:end -->"
HEADING = "# Scale: the whole pipeline at 100k, 250k and 1M messages"
TARGET_SECONDS, TARGET_RSS, TARGET_GROWTH = 3600.0, 6 * 1024**3, 1.5


def machine() -> dict[str, Any]:
    lines = Path("/proc/cpuinfo").read_text().splitlines()
    cpu = next((line.split(":", 1)[1].strip() for line in lines if "model name" in line), platform.processor())
    return {
        "cpus": os.cpu_count(),
        "affinity": len(os.sched_getaffinity(0)),
        "cpu": cpu,
        "memory_gib": round(psutil.virtual_memory().total / 1024**3, 1),
        "python": platform.python_version(),
        "system": platform.system(),
    }


def _sample_tree(pid: int, peak: list[int], stop: threading.Event) -> None:
    """Largest summed RSS of the process and its descendants, sampled until `stop`."""
    try:
        proc = psutil.Process(pid)
    except psutil.NoSuchProcess:
        return
    while not stop.wait(0.25):
        try:
            procs = [proc, *proc.children(recursive=True)]
            total = 0
            for p in procs:
                try:
                    total += p.memory_info().rss
                except psutil.NoSuchProcess:
                    pass
            peak[0] = max(peak[0], total)
        except psutil.NoSuchProcess:
            return


def cli(data_dir: Path, log: Path, *args: str, spy: Path | None = None) -> dict[str, Any]:
    """One `chatmem` process: its wall time, exit status, peak RSS (own and sampled tree) and JSON summary.

    With `spy`, py-spy samples the process (20 Hz, without pausing it) into that file (raw collapsed stacks;
    read them with benchmarks/spy_hotspots.py).
    """
    command = [sys.executable, "-m", "flows.cli", "--data-dir", str(data_dir), "-q", *args, "--json"]
    load_before = os.getloadavg()
    started = time.perf_counter()
    with log.open("ab") as err, (log.parent / (log.name + ".stdout")).open("w+b") as out:
        err.write(f"\n$ {' '.join(command)}\n".encode())
        err.flush()
        child = subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=err)
        peak, stop = [0], threading.Event()
        sampler = threading.Thread(target=_sample_tree, args=(child.pid, peak, stop), daemon=True)
        sampler.start()
        profiler = None
        if spy is not None:
            spy.parent.mkdir(parents=True, exist_ok=True)
            py_spy = Path(sys.executable).parent / "py-spy"
            profiler = subprocess.Popen(
                [
                    str(py_spy),
                    "record",
                    "-r",
                    "20",
                    "-f",
                    "raw",
                    "--nonblocking",
                    "-o",
                    str(spy),
                    "--pid",
                    str(child.pid),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - started
        stop.set()
        sampler.join()
        if profiler is not None:
            profiler.wait(timeout=60)
        out.seek(0)
        text = out.read().decode(errors="replace")
    try:
        summary = json.loads(text)
    except json.JSONDecodeError:
        summary = {"stdout": text[-2000:]}
    return {
        "wall_s": round(wall, 2),
        "rc": child.returncode,
        "peak_rss": usage.ru_maxrss * 1024,  # Linux reports KiB
        "tree_rss": peak[0],
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in os.getloadavg()],
        "summary": summary,
    }


def stage_runs(data_dir: Path, run_id: str) -> dict[str, dict[str, Any]]:
    conn = sqlite3.connect(data_dir / "staging.db")
    rows = conn.execute(
        "SELECT stage, status, duration_s, counts FROM stage_runs WHERE run_id = ? ORDER BY id", (run_id,)
    ).fetchall()
    conn.close()
    return {
        str(stage): {"status": status, "stage_s": round(float(seconds or 0.0), 2), "counts": json.loads(counts or "{}")}
        for stage, status, seconds, counts in rows
    }


def count_messages(data_dir: Path) -> int:
    conn = sqlite3.connect(data_dir / "archive.db")
    try:
        return int(conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0])
    finally:
        conn.close()


def size_label(messages: int) -> str:
    return f"{messages // 1_000_000}m" if messages >= 1_000_000 else f"{round(messages / 1000)}k"


def measure(args: argparse.Namespace) -> Path:
    data_dir: Path = args.data_dir
    log = data_dir.parent / f"{data_dir.name}.log"
    out_path: Path = args.out
    if args.resume:
        # Continue a run cut short (a session that ended, a kill): the same data dir and run id, the stages it
        # finished kept as measured, the rest measured now, each in its own process as before.
        result: dict[str, Any] = json.loads(out_path.read_text(encoding="utf-8"))
        result.setdefault("resumed", []).append(
            {"at": datetime.now(UTC).isoformat(timespec="seconds"), "command": " ".join(sys.argv)}
        )
    else:
        if data_dir.exists():
            shutil.rmtree(data_dir)
        data_dir.mkdir(parents=True)
        log.write_text("")
        result = {
            "export": str(args.export),
            "export_bytes": args.export.stat().st_size,
            "data_dir": str(data_dir),
            "started": datetime.now(UTC).isoformat(timespec="seconds"),
            "machine": machine(),
            "command": " ".join([Path(sys.executable).name, *sys.argv]),
            "stages": {},
            "incremental": None,
        }

    def save() -> None:
        out_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = out_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(result, indent=1))
        tmp.replace(out_path)

    def record(stage: str, measured: dict[str, Any], run_id: str) -> bool:
        ledger = stage_runs(data_dir, run_id).get(stage, {})
        measured.update(ledger)
        measured.pop("summary", None) if measured["rc"] == 0 else None
        result["stages"][stage] = measured
        save()
        print(
            f"{stage:15s} rc={measured['rc']} wall {measured['wall_s']:8.1f} s  in-stage "
            f"{ledger.get('stage_s', 0):8.1f} s  peak {measured['peak_rss'] / 2**20:7.0f} MiB  "
            f"tree {measured['tree_rss'] / 2**20:7.0f} MiB  load {measured['load_after'][0]}",
            flush=True,
        )
        return measured["rc"] == 0

    def spy(stage: str) -> Path | None:
        return args.spy / f"{stage}.txt" if args.spy is not None else None

    def finished(stage: str) -> bool:
        return bool(result["stages"].get(stage, {}).get("rc") == 0)

    if args.resume:
        run_id = str(result["run_id"])
        ok = finished("ingest")
    else:
        first = cli(data_dir, log, "run", str(args.export), "--only", "ingest", spy=spy("ingest"))
        run_id = str(first["summary"].get("run_id", ""))
        result["run_id"] = run_id
        result["messages"] = count_messages(data_dir)
        result["size"] = args.size or size_label(result["messages"])
        if args.out_default:
            out_path = OUT / f"scale-{result['size']}.json"
        ok = record("ingest", first, run_id)
    for stage in STAGES:
        if not ok or stage in args.skip:
            break
        if finished(stage):
            continue
        ok = record(stage, cli(data_dir, log, "run", "--run-id", run_id, "--only", stage, spy=spy(stage)), run_id)
    if ok and args.new_dump is not None:
        before = count_messages(data_dir)
        again = cli(data_dir, log, "run", str(args.new_dump))
        new_run = str(again["summary"].get("run_id", ""))
        result["incremental"] = {
            "export": str(args.new_dump),
            "new_messages": count_messages(data_dir) - before,
            "run_id": new_run,
            "wall_s": again["wall_s"],
            "rc": again["rc"],
            "peak_rss": again["peak_rss"],
            "tree_rss": again["tree_rss"],
            "stages": stage_runs(data_dir, new_run),
        }
        save()
        print(f"incremental: rc={again['rc']} wall {again['wall_s']:.1f} s", flush=True)
    subprocess.run(
        [sys.executable, "-m", "flows.cli", "--data-dir", str(data_dir), "-q", "graph", "down"],
        cwd=ROOT,
        capture_output=True,
        check=False,
    )
    result["finished"] = datetime.now(UTC).isoformat(timespec="seconds")
    save()
    if not args.keep:
        shutil.rmtree(data_dir, ignore_errors=True)
    return out_path


# -- the RESULTS.md section -------------------------------------------------------------------------------------
def load_results(extra: list[Path]) -> list[dict[str, Any]]:
    """Every measured size, from benchmarks/out/scale-*.json and `extra`; of two runs of one size, the newer."""
    by_size: dict[str, dict[str, Any]] = {}
    for path in [*sorted(OUT.glob("scale-*.json")), *extra]:
        data = json.loads(path.read_text())
        if data.get("stages") and data.get("messages"):
            known = by_size.get(data["size"])
            if known is None or data["started"] >= known["started"]:
                by_size[data["size"]] = data
    return sorted(by_size.values(), key=lambda d: int(d["messages"]))


def _mib(value: float) -> str:
    return f"{value / 2**20:,.0f}"


def _per_k(seconds: float, messages: int) -> float:
    return seconds * 1000 / (messages / 1000)


def render(results: list[dict[str, Any]]) -> str:
    sizes = [r["size"] for r in results]
    lines = [HEADING, "", BEGIN, ""]
    lines.append(
        "Every stage through the real CLI in its own process (`chatmem run --run-id R --only STAGE`), offline "
        "defaults, fresh data dir, exports from benchmarks/gen_real_archive.py (real chat turns). Wall includes "
        "process start-up; in-stage is stage_runs.duration_s; peak RSS is the stage process's own maximum "
        "(ru_maxrss); tree adds its descendants (sampled; the local graph server under load). On a shared "
        "machine: read times as upper bounds (load average after each stage in the per-size tables)."
    )
    lines += [
        "",
        "## Cost per message: ms per 1k messages, in-stage (wall with start-up; CPU of the process), and growth",
        "",
    ]
    first, last = results[0], results[-1]
    growth_label = f"growth {first['size']}→{last['size']} in-stage (wall; CPU)"
    lines.append("| stage | " + " | ".join(sizes) + f" | {growth_label} |")
    lines.append("|---|" + "---:|" * (len(sizes) + 1))
    for stage in ("ingest", *STAGES):
        cells = []
        for r in results:
            m = r["stages"].get(stage)
            if m and m["rc"] == 0:
                inside, wall = _per_k(m.get("stage_s", 0.0), r["messages"]), _per_k(m["wall_s"], r["messages"])
                cpu = _per_k(m["cpu_s"], r["messages"])
                cells.append(f"{inside:,.0f} ({wall:,.0f}; {cpu:,.0f})")
            else:
                cells.append("—")
        a, b = first["stages"].get(stage), last["stages"].get(stage)
        if len(results) > 1 and a and b and a["rc"] == 0 and b["rc"] == 0 and a.get("stage_s"):
            scale = first["messages"] / last["messages"]
            inside = b.get("stage_s", 0.0) / a["stage_s"] * scale
            wall = b["wall_s"] / a["wall_s"] * scale
            cpu = b["cpu_s"] / a["cpu_s"] * scale
            mark = "" if inside <= TARGET_GROWTH else " ✗"
            cells.append(f"{inside:.2f}×{mark} ({wall:.2f}×; {cpu:.2f}×)")
        else:
            cells.append("—")
        lines.append(f"| {stage} | " + " | ".join(cells) + " |")
    lines += [
        "",
        f"Target: growth ≤ {TARGET_GROWTH}× per stage from 100k to 1M (cost per message at the larger size over the "
        "smaller). In-stage is the stage's own work; wall adds a process start-up (imports, Prefect's ephemeral "
        "API) that a whole `chatmem run` pays once, not once per stage. CPU is the stage process's user+system "
        "seconds: on a loaded machine the steadiest of the three (wall and in-stage include waiting for a core).",
        "",
        "## Totals",
        "",
    ]
    lines.append(
        "| size | messages | stages done | wall (min) | in-stage (min) | max peak RSS (MiB) | max tree RSS (MiB) "
        "| target |"
    )
    lines.append("|---|---:|---:|---:|---:|---:|---:|---|")
    for r in results:
        done = [m for m in r["stages"].values() if m["rc"] == 0]
        wall = sum(m["wall_s"] for m in done)
        peak = max((m["peak_rss"] for m in done), default=0)
        tree = max((m["tree_rss"] for m in done), default=0)
        inside = sum(m.get("stage_s", 0.0) for m in done)
        scaled = wall * 1_000_000 / r["messages"]
        target = (
            f"1M: ≤ 60 min ({'met' if wall <= TARGET_SECONDS else 'missed'}), ≤ 6 GiB "
            f"({'met' if peak <= TARGET_RSS else 'missed'})"
            if r["messages"] >= 1_000_000 and len(done) == 1 + len(STAGES)
            else f"not judged: {len(done)} of {1 + len(STAGES)} stages ran"
            if r["messages"] >= 1_000_000
            else f"done stages, linear to 1M: {scaled / 60:,.0f} min"
        )
        lines.append(
            f"| {r['size']} | {r['messages']:,} | {len(done)}/{1 + len(STAGES)} | {wall / 60:,.1f} | "
            f"{inside / 60:,.1f} | {_mib(peak)} | "
            f"{_mib(tree)} | {target} |"
        )
    for r in results:
        lines += ["", f"## {r['size']}: {r['messages']:,} messages ({r['started']}, run {r.get('run_id', '?')})", ""]
        lines.append("| stage | wall s | in-stage s | CPU s | peak RSS MiB | tree RSS MiB | ms/1k msg | load after |")
        lines.append("|---|---:|---:|---:|---:|---:|---:|---:|")
        for stage, m in r["stages"].items():
            status = "" if m["rc"] == 0 else f" (failed, rc {m['rc']})"
            lines.append(
                f"| {stage}{status} | {m['wall_s']:,.1f} | {m.get('stage_s', 0):,.1f} | {m['cpu_s']:,.1f} | "
                f"{_mib(m['peak_rss'])} | {_mib(m['tree_rss'])} | {_per_k(m['wall_s'], r['messages']):,.1f} | "
                f"{m['load_after'][0]:.1f} |"
            )
        inc = r.get("incremental")
        if inc:
            per_stage = ", ".join(f"{k} {v['status']} {v['stage_s']:.1f} s" for k, v in inc["stages"].items())
            lines += [
                "",
                f"Incremental: `chatmem run NEW_DUMP` with {inc['new_messages']:,} new messages over this data dir: "
                f"{inc['wall_s']:,.1f} s wall (rc {inc['rc']}, peak RSS {_mib(inc['peak_rss'])} MiB); {per_stage}.",
            ]
        mach = r["machine"]
        lines += [
            "",
            f"Machine: {mach['cpus']} cores ({mach['cpu']}), {mach['memory_gib']} GiB, Python {mach['python']}. "
            f"Command: `{r['command']}`",
        ]
    lines += ["", END]
    return "\n".join(lines) + "\n"


def write_section(path: Path, section: str) -> None:
    """Replace the section between the markers (with its heading), or append it; other sections stay."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    start, end = text.find(HEADING), text.find(END)
    if start >= 0 and end > start:
        text = text[:start] + section.rstrip("\n") + text[end + len(END) :]
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Example: python benchmarks/bench_scale.py --export /work/scale/chatgpt-real-100k-seed1.json",
    )
    parser.add_argument("--export", type=Path, help="the export to run the pipeline on")
    parser.add_argument("--new-dump", type=Path, help="a small export with new ids, run after, over the same data")
    parser.add_argument("--data-dir", type=Path, help="fresh data dir (deleted first; default /work/scale/bench-N)")
    parser.add_argument("--size", help="label of this size (default from the message count: 100k, 1m)")
    parser.add_argument("--out", type=Path, help="JSON to write (default benchmarks/out/scale-SIZE.json)")
    parser.add_argument("--skip", nargs="*", default=[], help="stop before these stages")
    parser.add_argument("--keep", action="store_true", help="keep the data dir afterwards")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="continue the run in --data-dir whose JSON is --out: skip the stages it finished, measure the rest",
    )
    parser.add_argument("--spy", type=Path, help="profile every stage process with py-spy into this folder")
    parser.add_argument("--write", action="store_true", help="render RESULTS.md's scale section from the JSONs")
    parser.add_argument("--json", nargs="*", type=Path, default=[], help="with --write: more result JSONs to merge")
    args = parser.parse_args(argv)
    if args.resume and (args.data_dir is None or args.out is None):
        parser.error("--resume needs --data-dir and --out (the JSON of the run to continue)")
    if args.resume:
        args.out_default = False
        measure(args)
    elif args.export is not None:
        args.out_default = args.out is None
        args.out = args.out or OUT / "scale-running.json"
        args.data_dir = args.data_dir or Path("/work/scale") / f"bench-{args.export.stem}"
        measure(args)
        if args.out_default:
            (OUT / "scale-running.json").unlink(missing_ok=True)
    elif not args.write:
        parser.error("give --export, or --write")
    if args.write:
        results = load_results(args.json)
        if not results:
            parser.error(f"no scale-*.json under {OUT}")
        write_section(HERE / "RESULTS.md", render(results))
        print(render(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
