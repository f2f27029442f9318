"""Measure chatmem's ingest stage against a naive baseline on one generated ChatGPT export.

Generates a deterministic export (benchmarks/gen_chatgpt_export.py), then runs each contender in its own
subprocess so that peak RSS belongs to that measurement alone: the child reports its own kernel high-water
mark (`ru_maxrss`), and the parent also samples the child's RSS with psutil as a cross-check. Throughput is
messages / seconds spent in the ingest call itself (interpreter start-up and imports are reported apart).

chatmem's stage is called directly, not through Prefect, whose start-up would dominate a run this short.

Example:
    python benchmarks/bench_ingest.py                      # 1,000,000 messages, writes benchmarks/RESULTS.md
    python benchmarks/bench_ingest.py --quick              # 50,000 messages, smoke test, no RESULTS.md
    python benchmarks/bench_ingest.py --profile --messages 200000   # cProfile of chatmem's ingest, top 25
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
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "out"
TARGET_RATE = 100_000  # messages/s, the stage's stated target
TARGET_RSS = 1 << 30  # bytes


# -- children: one measurement each --------------------------------------------------------------------


def child_chatmem(export: Path, data_dir: Path, profile: Path | None) -> dict[str, Any]:
    began = time.perf_counter()
    sys.path.insert(0, str(ROOT))
    from contracts.settings import Settings
    from ingest.stage import run as ingest_run
    from staging.archive import open_archive
    from staging.ledger import open_run, open_staging

    imported = time.perf_counter()
    settings = Settings(data_dir=data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    archive = open_archive(settings.archive_path)
    staging = open_staging(settings.staging_path)
    run_id = open_run(
        staging,
        stages=["ingest"],
        exports=[str(export)],
        settings=settings.public_dump(),
        code_version="bench",
    )
    profiler = None
    if profile is not None:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    start = time.perf_counter()
    result = ingest_run(archive, staging, run_id=run_id, settings=settings, exports=[export])
    seconds = time.perf_counter() - start
    if profiler is not None:
        import pstats

        profiler.disable()
        with profile.open("w") as handle:
            pstats.Stats(profiler, stream=handle).sort_stats("cumulative").print_stats(25)
            pstats.Stats(profiler, stream=handle).sort_stats("tottime").print_stats(25)
    archive.close()
    staging.close()
    return {
        "messages": result.counts["messages_read"],
        "inserted": result.counts["messages_inserted"],
        "conversations": result.counts["conversations_written"],
        "quarantined": result.counts["quarantined"],
        "seconds": seconds,
        "startup_seconds": imported - began,
        "db_bytes": settings.archive_path.stat().st_size,
    }


def child_baseline(export: Path, data_dir: Path) -> dict[str, Any]:
    sys.path.insert(0, str(HERE))
    from naive_baseline import ingest

    data_dir.mkdir(parents=True, exist_ok=True)
    db = data_dir / "naive.db"
    start = time.perf_counter()
    messages, load_seconds = ingest(export, db)
    seconds = time.perf_counter() - start
    return {
        "messages": messages,
        "seconds": seconds,
        "load_seconds": load_seconds,
        "startup_seconds": 0.0,
        "db_bytes": db.stat().st_size,
    }


def run_child(argv: list[str]) -> int:
    import resource

    kind, export, data_dir = argv[0], Path(argv[1]), Path(argv[2])
    profile = Path(argv[3]) if len(argv) > 3 else None
    figures = child_chatmem(export, data_dir, profile) if kind == "chatmem" else child_baseline(export, data_dir)
    # Linux reports ru_maxrss in KiB.
    figures["maxrss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print("BENCH " + json.dumps(figures))
    return 0


# -- parent: generate, measure, report ----------------------------------------------------------------


def measure(kind: str, export: Path, data_dir: Path, profile: Path | None = None) -> dict[str, Any]:
    shutil.rmtree(data_dir, ignore_errors=True)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", kind, str(export), str(data_dir)]
    if profile is not None:
        cmd.append(str(profile))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    began = time.perf_counter()
    child = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    sampled = 0
    handle = psutil.Process(child.pid)
    while child.poll() is None:
        try:
            sampled = max(sampled, handle.memory_info().rss)
        except psutil.Error:
            break  # exited between poll() and the sample
        time.sleep(0.05)
    stdout = child.stdout.read() if child.stdout else ""
    child.wait()
    wall = time.perf_counter() - began
    lines = [line for line in stdout.splitlines() if line.startswith("BENCH ")]
    if child.returncode != 0 or not lines:
        raise SystemExit(f"{kind} measurement failed (exit {child.returncode}); output:\n{stdout}")
    figures: dict[str, Any] = json.loads(lines[-1][len("BENCH ") :])
    figures["sampled_rss_bytes"] = sampled
    figures["process_seconds"] = wall
    figures["rate"] = figures["messages"] / figures["seconds"]
    return figures


def ensure_export(messages: int, seed: int, as_zip: bool) -> Path:
    """Generate the export unless an identical one (same name = same args, deterministic) is already there."""
    sys.path.insert(0, str(HERE))
    from gen_chatgpt_export import generate

    path = OUT / f"export-{messages}-seed{seed}.{'zip' if as_zip else 'json'}"
    if path.exists():
        print(f"reusing {path}")
        return path
    partial = path.with_name(path.name + ".partial")
    began = time.perf_counter()
    written, conversations, size = generate(partial, messages, seed, as_zip=as_zip)
    partial.rename(path)
    print(
        f"generated {path}: {written:,} messages, {conversations:,} conversations, {size:,} bytes of JSON "
        f"in {time.perf_counter() - began:.1f} s"
    )
    return path


def machine(load: tuple[float, float, float]) -> dict[str, str]:
    cpu = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        import ijson

        ijson_backend = f"{ijson.__version__} ({ijson.backend})"
    except ImportError:
        ijson_backend = "not installed"
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        commit += " + uncommitted changes" if dirty else ""
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": cpu,
        "cores": f"{len(os.sched_getaffinity(0))} usable of {os.cpu_count()}",
        "ram": f"{psutil.virtual_memory().total / 2**30:.1f} GiB",
        "os": platform.platform(),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "ijson": ijson_backend,
        "commit": commit,
        # Others may share the machine: the load at the start says how quiet the run was.
        "load average at start": " ".join(f"{x:.2f}" for x in load),
    }


def report(command: str, export: Path, results: dict[str, dict[str, Any]], info: dict[str, str]) -> str:
    mib = 2**20
    chat, base = results["chatmem"], results["baseline"]
    rows = [
        "| | messages | ingest s | messages/s | peak RSS (ru_maxrss) | peak RSS (sampled) | db size |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, fig in (("chatmem ingest stage", chat), ("naive baseline", base)):
        rows.append(
            f"| {name} | {fig['messages']:,} | {fig['seconds']:.1f} | {fig['rate']:,.0f} | "
            f"{fig['maxrss_bytes'] / mib:,.0f} MiB | {fig['sampled_rss_bytes'] / mib:,.0f} MiB | "
            f"{fig['db_bytes'] / mib:,.0f} MiB |"
        )
    rate_ok = "meets" if chat["rate"] >= TARGET_RATE else "MISSES"
    rss_ok = "meets" if chat["maxrss_bytes"] <= TARGET_RSS else "MISSES"
    lines = [
        f"Export: `{export.name}`, {export.stat().st_size / mib:,.0f} MiB on disk, generated by "
        f"`gen_chatgpt_export.py` (seed in the name).",
        "",
        *rows,
        "",
        f"- chatmem / baseline throughput: **{chat['rate'] / base['rate']:.2f}x**; "
        f"peak RSS ratio: {chat['maxrss_bytes'] / base['maxrss_bytes']:.3f}.",
        f"- Target ≥ {TARGET_RATE:,} messages/s: {rate_ok} ({chat['rate']:,.0f}). "
        f"Target peak RSS ≤ 1 GiB: {rss_ok} ({chat['maxrss_bytes'] / mib:,.0f} MiB).",
        f"- chatmem wrote {chat['inserted']:,} messages in {chat['conversations']:,} conversations, "
        f"{chat['quarantined']:,} quarantined; its process start-up and imports took "
        f"{chat['startup_seconds']:.1f} s (not counted above).",
        f"- The baseline spent {base['load_seconds']:.1f} s of its {base['seconds']:.1f} s in `json.load`, "
        "the rest walking the mappings and inserting.",
        "",
        "Machine:",
        "",
        *[f"- {key}: {value}" for key, value in info.items()],
        "",
        "Command:",
        "",
        "```",
        command,
        "```",
    ]
    return "\n".join(lines)


def write_section(path: Path, section: str) -> None:
    """Replace this benchmark's section of RESULTS.md (from its heading to the next top-level heading),
    keeping the other benchmarks' sections."""
    old = path.read_text() if path.exists() else ""
    section = section.rstrip("\n") + "\n\n"
    heading = section.splitlines()[0]
    start = old.find(heading)
    if start < 0:
        path.write_text(section + old)
        return
    end = old.find("\n# ", start + len(heading))
    path.write_text(old[:start] + section + (old[end + 1 :] if end >= 0 else ""))


RESULTS_HEADER = """# Ingest benchmark results

Written by `benchmarks/bench_ingest.py` (see `benchmarks/README.md` for what is measured and how). One run on
a shared machine: treat the figures as orientation, and re-run before comparing against a change.

Why the 100,000 messages/s target is missed, measured (200k generated messages, ~1.2 KB each, cProfile and
wall-clock splits on a quiet machine, 38-40k msg/s there):

- SQLite writes: ~2.1 s per 200k (~10 us/message) for rows of ~1.2 KB with the uuid primary key and the
  (conversation_id, seq) index; a bare `executemany` re-insert of the finished 1M rows took 17.2 s (9.2 s with
  no indexes), so the write floor alone is ~55-100k msg/s before any parsing.
- JSON: orjson on array elements cut at object boundaries, ~0.7 s per 200k (ijson's object building was ~3.5 s).
- Python per message (drafts, tree, contract models, archive rows): ~2.5 s per 200k.
- Tried and left out: parsing in a worker process that pipes plain row tuples to the writer gained < 10 %
  (pickling 1.2 KB rows costs nearly what the overlap saves); raising GC thresholds gained 4 %.

"""


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        return run_child(argv[1:])
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Example:\n  python benchmarks/bench_ingest.py --messages 1000000\n"
        "  python benchmarks/bench_ingest.py --quick",
    )
    parser.add_argument("--messages", type=int, default=1_000_000, help="messages in the generated export")
    parser.add_argument("--seed", type=int, default=7, help="generator seed")
    parser.add_argument("--quick", action="store_true", help="smoke run on 50,000 messages; no RESULTS.md")
    parser.add_argument("--zip", action="store_true", help="benchmark a .zip export instead of plain JSON")
    parser.add_argument("--keep", action="store_true", help="keep the export and databases under out/")
    parser.add_argument("--profile", action="store_true", help="only profile chatmem's ingest (cProfile)")
    parser.add_argument("--results", type=Path, default=HERE / "RESULTS.md", help="where a full run writes its report")
    args = parser.parse_args(argv)
    messages = 50_000 if args.quick else args.messages
    command = " ".join(["python benchmarks/bench_ingest.py", *argv])

    OUT.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()
    export = ensure_export(messages, args.seed, args.zip)
    try:
        if args.profile:
            profile = OUT / f"profile-{messages}.txt"
            fig = measure("chatmem", export, OUT / "db-profile", profile)
            print(f"chatmem under cProfile: {fig['messages']:,} messages in {fig['seconds']:.1f} s")
            print(profile.read_text())
            return 0
        results = {}
        for kind in ("chatmem", "baseline"):
            print(f"measuring {kind} ...", flush=True)
            results[kind] = measure(kind, export, OUT / f"db-{kind}")
            fig = results[kind]
            print(
                f"  {fig['messages']:,} messages in {fig['seconds']:.1f} s = {fig['rate']:,.0f} msg/s, "
                f"peak RSS {fig['maxrss_bytes'] / 2**20:,.0f} MiB",
                flush=True,
            )
        text = report(command, export, results, machine(load))
        print()
        print(text)
        if not args.quick:
            write_section(args.results, RESULTS_HEADER + text + "\n")
            print(f"\nwrote {args.results}")
    finally:
        if not args.keep:
            for path in (OUT / "db-chatmem", OUT / "db-baseline", OUT / "db-profile"):
                shutil.rmtree(path, ignore_errors=True)
            export.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
