"""A month of schedule (issue 23): daily full re-exports through `chatmem serve --watch --once`, and what each day
costs and leaves on disk. Not a test.

    python benchmarks/gen_real_archive.py --messages 5000 --seed 1 --out base.json
    python benchmarks/bench_month.py base.json --work WORK [--days 30 --per-day 300 --json OUT.json --plot OUT.png]
    python benchmarks/bench_month.py base.json --built BUILT_DATA_DIR --work WORK ...   # skip the first build
    python benchmarks/bench_month.py base.json --work WORK --resume ...                 # go on after a stop

Day 0 is the first build, `chatmem --data-dir WORK/data run BASE` (with --built: a copy of BUILT_DATA_DIR, which
must have been built from BASE, its local graph target renamed to the copy's as bench_reexport.py does). Each
day k then writes day k's export, the service's next full export: day k-1's export again plus --per-day new
messages, half of them continuing old conversations, half in new ten-message conversations dated day k
(bench_load.py's `reexport`, the one bench_reexport.py --make-export writes), into the watch folder WORK/watch,
and runs `chatmem --data-dir WORK/data serve --watch WORK/watch --once --json` as a whole process, as a cron job
or a service's timer would. Recorded per day: wall and CPU (user + system of the process and the children it
reaped, from wait4), peak RSS, exit code, the run's stage durations; the size of every entry of the data dir
(archive.db, staging.db and their -wal, graph/, recall-index/, cues-state/, cluster_models/, prefect/,
optuna.db, ...), the bytes of every table (with its indexes) of archive.db and staging.db (SQLite's dbstat; off
with --no-dbstat, which reads every page: about a minute per day at 250k) and the rows of every table.

--report-only reads the JSON again, refreshes each day's stage figures from staging.db and rewrites the table
and the plot.

The watch folder: a service's export is the whole history each time, so the user who drops the new file in the
folder deletes the old one (--watch-policy replace, the default): the archive's `sources` rows remember which
bytes were ingested, and every message of the old file is in the new one. With --watch-policy keep every day's
file stays (and the first build's export is put there too): each look then reads and hashes every old file to
find it ingested already (flows/serve.py split_new), a cost per run that grows with the number of files kept.

--server: the days run against one Prefect server started for the whole month (`prefect server start` on
loopback, its home WORK/prefect-server), as a long-running `chatmem serve --watch` runs each tick: every tick's
flow run is a fresh process (Prefect's runner spawns it: chatmem's imports are paid each day) that talks to the
server `serve` started once. Each day is still `serve --watch WORK/watch --once` as a whole process, with
PREFECT_API_URL set to that server, so it starts none of its own (flows/early_api.py); a day's `server` field
says which way it ran.

After each day the JSON (--json, default WORK/month.json) is rewritten, so --resume goes on after a stop from
the last day recorded. At the end: a markdown table of the days and, per table, the rows added per day against
what the data alone would add (rows per message at day 0 times the new messages: a ratio near 1 grows with the
data, far above 1 grows with the runs), and the plot (--plot, default WORK/month.png): sizes per day, messages on
a second axis, and each day's wall seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
import zlib
from datetime import datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

MB = 1024 * 1024
DAY_S = 86_400.0
FIRST_NEW = 1.8e9  # where bench_load.reexport dates its new conversations; day k starts k days later
# The sizes the plot and the markdown table show (data-dir entries; -wal/-shm are added to their database).
COUNTED = ("cluster", "cues", "load")  # stage counts kept per day (incremental or not, rows rebuilt, loaded)
SHOWN = (
    "archive.db",
    "staging.db",
    "graph",
    "recall-index",
    "recall-vectors",
    "cues-state",
    "cluster_models",
    "prefect",
    "optuna.db",
)


def timed(data_dir: Path, *args: str) -> dict[str, Any]:
    """One `chatmem` process, wall, CPU and peak RSS from wait4 (as bench_reexport.chatmem); its output goes to
    temporary files, so that a chatty stderr cannot block it."""
    import tempfile

    command = [str(Path(sys.executable).parent / "chatmem"), "--data-dir", str(data_dir), "-q", *args]
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        started, began = time.perf_counter(), time.time()
        child = subprocess.Popen(command, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(child.pid, 0)
        wall, ended = time.perf_counter() - started, time.time()
        child.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait for it again
        out.seek(0)
        err.seek(0)
        return {
            "args": " ".join(args),
            "rc": child.returncode,
            "wall_s": round(wall, 1),
            "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
            "peak_rss_mib": round(usage.ru_maxrss / 1024),  # the largest process of the tree (Linux: KiB)
            "began": began,  # epoch seconds: where the run's ledger times fall in the process (`phases`)
            "ended": ended,
            "out": out.read(),
            "err": err.read()[-4000:],
        }


def start_prefect_server(home: Path, timeout_s: float = 240.0) -> tuple[subprocess.Popen[bytes], str]:
    """`prefect server start` on a free loopback port with its own home, as `chatmem serve` starts one (no UI, no
    telemetry); returns the process and its API URL once it answers."""
    from flows import local_api  # the standard library only: this process still never imports prefect

    port = local_api.free_port()
    home.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PREFECT_HOME": str(home), "PREFECT_UI_ENABLED": "false", "DO_NOT_TRACK": "1"}
    env["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
    env.pop("PREFECT_API_URL", None)
    command = [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port)]
    server = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/api"
    try:
        local_api.wait_healthy(server, url, timeout_s)
    except local_api.NotReady as failure:
        server.terminate()
        raise SystemExit(f"the Prefect server {failure}") from None
    return server, url


def tree_bytes(path: Path) -> int:
    if path.is_symlink() or not path.is_dir():
        return path.lstat().st_size if path.exists() or path.is_symlink() else 0
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += (Path(root) / name).lstat().st_size
            except FileNotFoundError:
                pass
    return total


def data_dir_sizes(data_dir: Path) -> dict[str, Any]:
    """Bytes of each entry of the data dir, the whole dir, and how many entries the per-run folders hold."""
    sizes = {entry.name: tree_bytes(entry) for entry in sorted(data_dir.iterdir())}
    entries = {
        name: len(list((data_dir / name).iterdir()))
        for name in ("recall-index", "recall-vectors", "cues-state", "cluster_models")
        if (data_dir / name).is_dir()
    }
    return {"bytes": sizes, "total_bytes": sum(sizes.values()), "entries": entries}


def with_wal(sizes: dict[str, int], name: str) -> int:
    return sum(sizes.get(name + suffix, 0) for suffix in ("", "-wal", "-shm"))


def table_rows(db: Path) -> dict[str, int]:
    """COUNT(*) of every ordinary table (virtual tables left out; their shadow tables are counted)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        names = [
            str(r[0])
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
                " AND sql NOT LIKE 'CREATE VIRTUAL%' ORDER BY name"
            )
        ]
        return {name: int(conn.execute(f'SELECT COUNT(*) FROM "{name}"').fetchone()[0]) for name in names}
    finally:
        conn.close()


def free_bytes(db: Path) -> int:
    """Bytes of the database's free pages (left by deleted rows, reused by the next writes)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return int(conn.execute("PRAGMA freelist_count").fetchone()[0]) * int(
            conn.execute("PRAGMA page_size").fetchone()[0]
        )
    finally:
        conn.close()


def table_bytes(db: Path) -> dict[str, int] | None:
    """Bytes of every table with its indexes (dbstat), or None where SQLite was built without dbstat."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        owner = {str(n): str(t) for n, t in conn.execute("SELECT name, tbl_name FROM sqlite_master")}
        found: dict[str, int] = {}
        for name, size in conn.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name"):
            table = owner.get(str(name), str(name))
            found[table] = found.get(table, 0) + int(size)
        return dict(sorted(found.items()))
    except sqlite3.OperationalError:
        return None
    finally:
        conn.close()


def stage_durations(staging: Path, run_id: str | None) -> dict[str, Any]:
    """Each stage's [status, seconds] in the run, and the counts of the stages that say how much was redone."""
    if not run_id:
        return {}
    conn = sqlite3.connect(f"file:{staging}?mode=ro", uri=True)
    try:
        found: dict[str, Any] = {}
        for stage, status, duration, counts in conn.execute(
            "SELECT stage, status, duration_s, counts FROM stage_runs WHERE run_id = ? ORDER BY rowid", (run_id,)
        ):
            found[str(stage)] = [str(status), round(float(duration or 0), 1)]
            if stage in COUNTED and counts:
                found[f"{stage} counts"] = json.loads(counts)
        return found
    finally:
        conn.close()


def phases(staging: Path, run_id: str | None, began: float | None, ended: float | None) -> dict[str, float]:
    """Where the process's wall went outside the stages: before the run opened in the ledger (start-up: imports,
    Prefect's API, the watch's look at the dumps), between the stages (Prefect's subflows, the runner), and after
    the run closed (the recall index finishing, the exit)."""
    if not run_id or began is None or ended is None:
        return {}
    conn = sqlite3.connect(f"file:{staging}?mode=ro", uri=True)
    try:
        run = conn.execute("SELECT started_at, finished_at FROM runs WHERE id = ?", (run_id,)).fetchone()
        in_stages = conn.execute(
            "SELECT COALESCE(SUM(duration_s), 0) FROM stage_runs WHERE run_id = ?", (run_id,)
        ).fetchone()[0]
    finally:
        conn.close()
    if run is None or run[1] is None:
        return {}
    opened, closed = (datetime.fromisoformat(t).timestamp() for t in run)
    return {
        "before_run_s": round(opened - began, 1),
        "between_stages_s": round(closed - opened - float(in_stages), 1),
        "after_run_s": round(ended - closed, 1),
    }


def regime(day: dict[str, Any]) -> str:
    """'cluster/cues': inc (incremental) or full, as the run's stage counts say ('-' when not run)."""
    found = []
    for stage in ("cluster", "cues"):
        counts = day["stages"].get(f"{stage} counts")
        found.append("-" if counts is None else ("inc" if counts.get("incremental") else "full"))
    return "/".join(found)


def observe(data_dir: Path, dbstat: bool) -> dict[str, Any]:
    found: dict[str, Any] = {"sizes": data_dir_sizes(data_dir), "rows": {}, "table_bytes": {}, "free_bytes": {}}
    for db in ("archive.db", "staging.db"):
        found["rows"][db] = table_rows(data_dir / db)
        found["free_bytes"][db] = free_bytes(data_dir / db)
        if dbstat:
            found["table_bytes"][db] = table_bytes(data_dir / db)
    found["messages"] = found["rows"]["archive.db"].get("messages", 0)
    return found


def make_export(previous: Path, out: Path, per_day: int, day: int, base: Path) -> dict[str, Any]:
    """Day `day`'s export: `previous` again plus `per_day` new messages. The ids of the new ones come from a seed
    of the day and the base export's size: two months from different bases (a --built data dir that went through
    a month already) share no new ids, and the same base gives the same month."""
    from bench_load import reexport

    started = time.perf_counter()
    seed = zlib.crc32(f"{base.stat().st_size}:{day}".encode())
    continued, added = reexport(previous, out, per_day, seed=seed, start=FIRST_NEW + day * DAY_S)
    return {
        "export": out.name,
        "export_bytes": out.stat().st_size,
        "continued": continued,
        "added_conversations": added,
        "seed": seed,
        "write_s": round(time.perf_counter() - started, 1),
    }


def rebase_copy(built: Path, data: Path) -> None:
    from bench_reexport import rebase_target

    shutil.copytree(built, data, symlinks=True)
    for stale in ("chatmem.lock", "run.starting"):
        (data / stale).unlink(missing_ok=True)
    rebase_target(built, data)


def place(src: Path, dst: Path) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)


def day_name(day: int) -> str:
    return f"conversations-day{day:02d}.json"


def summary(result: dict[str, Any]) -> str:
    """The markdown table of the days and the growth per table."""
    days = result["days"]
    head = ["day", "messages", "rc", "wall s", "CPU s", "peak RSS MiB", "cluster/cues"]
    head += [f"{n} MB" for n in SHOWN] + ["data dir MB"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for d in days:
        sizes = d["sizes"]["bytes"]
        cells = [str(d["day"]), f"{d['messages']:,}", str(d["rc"]), str(d["wall_s"]), str(d["cpu_s"])]
        cells += [str(d.get("peak_rss_mib", "")), regime(d)]
        cells += [f"{with_wal(sizes, n) / MB:.1f}" for n in SHOWN]
        cells.append(f"{d['sizes']['total_bytes'] / MB:.1f}")
        lines.append("| " + " | ".join(cells) + " |")
    if len(days) < 3:
        return "\n".join(lines)
    # Growth per day over days 1..N (day 0 is the first build): rows and bytes added per day against what the data
    # alone would add (the table's rows per archived message at day 1 times the messages added per day).
    first, last = days[1], days[-1]
    n = last["day"] - first["day"]
    new_messages = (last["messages"] - first["messages"]) / n
    lines += ["", f"Growth per day, days {first['day']}-{last['day']} ({new_messages:.0f} new messages a day):", ""]
    lines += ["| db | table | rows day 1 | rows last | rows/day | x data | MB day 1 | MB last | KB/day |"]
    lines += ["|" + "---|" * 9]
    for db in ("archive.db", "staging.db"):
        for table in sorted(last["rows"][db]):
            r0, r1 = first["rows"][db].get(table, 0), last["rows"][db][table]
            b0 = (first["table_bytes"].get(db) or {}).get(table, 0)
            b1 = (last["table_bytes"].get(db) or {}).get(table, 0)
            if r0 == r1 and b0 == b1:
                continue
            per_day = (r1 - r0) / n
            expected = r0 / first["messages"] * new_messages if first["messages"] and r0 else 0
            ratio = f"{per_day / expected:.2f}" if expected else "-"
            lines.append(
                f"| {db} | {table} | {r0:,} | {r1:,} | {per_day:,.1f} | {ratio} | {b0 / MB:.2f} | {b1 / MB:.2f}"
                f" | {(b1 - b0) / n / 1024:,.1f} |"
            )
    return "\n".join(lines)


def plot(result: dict[str, Any], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    days = result["days"]
    x = [d["day"] for d in days]
    fig, (ax, ax_wall) = plt.subplots(2, 1, figsize=(9, 7.5), sharex=True, gridspec_kw={"height_ratios": [3, 1]})
    for name in ("archive.db", "staging.db", "graph", "recall-index", "recall-vectors", "prefect"):
        ax.plot(x, [with_wal(d["sizes"]["bytes"], name) / MB for d in days], marker=".", label=name + " (+wal)")
    ax.plot(x, [d["sizes"]["total_bytes"] / MB for d in days], "k--", label="whole data dir")
    ax.set_ylabel("MB")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    messages = ax.twinx()
    messages.plot(x, [d["messages"] for d in days], color="grey", alpha=0.5, linewidth=3, label="messages (right)")
    messages.set_ylabel("messages in archive.db")
    messages.set_ylim(bottom=0)
    handles = ax.get_legend_handles_labels()[0] + messages.get_legend_handles_labels()[0]
    ax.legend(handles=handles, loc="center right", fontsize=8)
    ax.set_title(f"{days[-1]['day']} {result['title']}", fontsize=9)
    ax_wall.bar(x, [d["wall_s"] for d in days], color="tab:blue", label="wall s")
    ax_wall.plot(x, [d["cpu_s"] for d in days], "r.", label="CPU s")
    ax_wall.axhline(60, color="grey", linestyle=":", linewidth=1)
    ax_wall.set_yscale("log")
    ax_wall.set_ylim(top=max([70.0] + [d["wall_s"] * 1.5 for d in days]))
    ax_wall.set_ylabel("seconds (day 0: first build)")
    ax_wall.set_xlabel("day")
    ax_wall.legend(fontsize=8)
    ax_wall.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=80)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("base", type=Path, help="the first export (day 0)")
    parser.add_argument("--work", type=Path, required=True, help="WORK: data/, watch/ and the next export go here")
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--per-day", type=int, default=300, help="new messages in each day's export")
    parser.add_argument("--built", type=Path, help="a data dir already built from BASE: copied as day 0")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--plot", type=Path)
    parser.add_argument("--watch-policy", choices=("replace", "keep"), default="replace")
    parser.add_argument("--no-dbstat", dest="dbstat", action="store_false", help="no bytes per table")
    parser.add_argument("--resume", action="store_true", help="go on from the last day in the JSON")
    parser.add_argument(
        "--server", action="store_true", help="one Prefect server for the month, as a long-running `serve` keeps"
    )
    parser.add_argument(
        "--report-only", action="store_true", help="no run: the stage figures read again, the table and plot rewritten"
    )
    args = parser.parse_args()
    work: Path = args.work.absolute()
    data, watch = work / "data", work / "watch"
    out_json = args.json or work / "month.json"
    out_plot = args.plot or work / "month.png"
    base = args.base.absolute()

    if args.report_only:
        result = json.loads(out_json.read_text())
        for day in result["days"]:  # the ledger keeps every run's stage rows
            day["stages"] = stage_durations(data / "staging.db", day.get("run_id")) or day["stages"]
        save(result, out_json)
        report(result, out_json, out_plot)
        return
    if args.resume and out_json.exists():
        result = json.loads(out_json.read_text())
        print(f"resuming after day {result['days'][-1]['day']}", flush=True)
    else:
        if work.exists():
            shutil.rmtree(work)
        watch.mkdir(parents=True)
        result = {
            "title": f"daily re-exports of +{args.per_day} messages over {base.name} through"
            f" `chatmem serve --watch --once` (watch folder: {args.watch_policy})",
            "command": " ".join([Path(sys.executable).name, *sys.argv]),
            "base": str(base),
            "watch_policy": args.watch_policy,
            "per_day": args.per_day,
            "days": [],
        }
        if args.built:
            rebase_copy(args.built.absolute(), data)
            day0: dict[str, Any] = {"args": f"copy of {args.built}", "rc": 0, "wall_s": 0.0, "cpu_s": 0.0}
        else:
            day0 = timed(data, "run", str(base), "--json")
        if args.watch_policy == "keep":
            place(base, watch / day_name(0))
        run_id = json.loads(day0["out"])["run_id"] if day0.get("out") else None
        result["days"].append(finish(0, day0, run_id, data, args.dbstat, {"export": base.name}))
        save(result, out_json)
    previous = watch / day_name(len(result["days"]) - 1)
    if not previous.exists():  # replace policy at day 0 (the base is not in the folder), or a resume of it
        previous = base
    server = None
    if args.server:
        server, os.environ["PREFECT_API_URL"] = start_prefect_server(work / "prefect-server")
    try:
        run_days(args, result, data, watch, work, base, previous, out_json)
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
    report(result, out_json, out_plot)


def run_days(
    args: argparse.Namespace,
    result: dict[str, Any],
    data: Path,
    watch: Path,
    work: Path,
    base: Path,
    previous: Path,
    out_json: Path,
) -> None:
    for day in range(len(result["days"]), args.days + 1):
        pending = work / ("next-" + day_name(day))
        made = make_export(previous, pending, args.per_day, day, base)
        if args.watch_policy == "replace":
            for old in watch.iterdir():
                old.unlink()
        pending.rename(watch / day_name(day))
        previous = watch / day_name(day)
        load = os.getloadavg()[0]
        step = timed(data, "serve", "--watch", str(watch), "--once", "--json")
        step["load_before"] = round(load, 2)
        step["server"] = "kept for the month" if args.server else "started by the day's process"
        try:
            served = json.loads(step["out"])
        except json.JSONDecodeError:
            served = {}
        step["ingested"] = [Path(i["path"]).name for i in served.get("ingested", [])]
        step["failed"] = served.get("failed", [])
        step["error"] = served.get("error")
        result["days"].append(finish(day, step, served.get("run_id"), data, args.dbstat, made))
        save(result, out_json)
        last = result["days"][-1]
        print(
            f"day {day}: rc {last['rc']}, {last['wall_s']} s wall, {last['cpu_s']} CPU-s, {last['messages']:,}"
            f" messages, staging.db {with_wal(last['sizes']['bytes'], 'staging.db') / MB:.1f} MB,"
            f" archive.db {with_wal(last['sizes']['bytes'], 'archive.db') / MB:.1f} MB;"
            f" outside the stages: {last.get('phases') or '-'}",
            flush=True,
        )
        if last["rc"] != 0:
            print(last.get("err", ""), file=sys.stderr)
            break


def report(result: dict[str, Any], out_json: Path, out_plot: Path) -> None:
    plot(result, out_plot)
    table = summary(result)
    (out_json.with_suffix(".md")).write_text(table + "\n")
    print(table)
    print(f"\n{out_json}, {out_json.with_suffix('.md')}, {out_plot}")


def finish(
    day: int, step: dict[str, Any], run_id: str | None, data: Path, dbstat: bool, made: dict[str, Any]
) -> dict[str, Any]:
    found = {"day": day, **made, **{k: v for k, v in step.items() if k not in ("out",)}, "run_id": run_id}
    if step.get("rc") == 0:
        found.pop("err", None)
    found["stages"] = stage_durations(data / "staging.db", run_id)
    found["phases"] = phases(data / "staging.db", run_id, step.get("began"), step.get("ended"))
    started = time.perf_counter()
    found.update(observe(data, dbstat))
    found["observe_s"] = round(time.perf_counter() - started, 1)
    return found


def save(result: dict[str, Any], out: Path) -> None:
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(result, indent=1))
    tmp.replace(out)


if __name__ == "__main__":
    main()
