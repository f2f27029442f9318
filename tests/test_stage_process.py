"""A stage run in a process of its own (flows/stage_process.py): the same rows as in the run's process, the same
error when it fails, nothing imported into the runner, and no orphan when the runner is killed.

Real UMAP, HDBSCAN and Optuna on 60 themed segments (tests/test_cluster.py's export); each spawned stage process
compiles numba's kernels again (~15-30 s), so the tests share one prepared data dir and copy it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import psutil
import pytest
from stage_process_probe import SECRET
from stage_support import ingest_stage, stage_embed, stage_embed_concepts, stage_segment
from test_cluster import small_settings, themed_export

from clients.stage import Outcome, StageContext
from contracts.errors import StageError
from contracts.redact import remember_secret
from contracts.settings import Settings
from flows.stage_process import kill_stage_processes, run_in_own_process
from flows.stage_runner import ALWAYS, NEVER, run_stage_now
from staging.archive import open_archive
from staging.ledger import open_run, open_staging

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data dir with 60 segments embedded (run r1), ready for the cluster stage."""
    root = tmp_path_factory.mktemp("prepared")
    settings = small_settings(root / "data")
    export = themed_export(root / "themes.jsonl")
    archive, staging = open_archive(settings.archive_path), open_staging(settings.staging_path)
    try:
        open_run(staging, stages=["all"], exports=[str(export)], settings={}, code_version="test", run_id="r1")
        ingest_stage.run(archive, staging, run_id="r1", settings=settings, exports=[export])
        stage_segment.run(archive, staging, run_id="r1", settings=settings)
        stage_embed.run(archive, staging, run_id="r1", settings=settings)
        stage_embed_concepts.run(archive, staging, run_id="r1", settings=settings)
    finally:
        archive.close()
        staging.close()
    return root / "data"


def copy_of(prepared: Path, tmp_path: Path, name: str) -> Settings:
    target = tmp_path / name
    shutil.copytree(prepared, target)
    return small_settings(target)


def digest(settings: Settings, sql: str) -> tuple[int, str]:
    with sqlite3.connect(settings.staging_path) as conn:
        rows = conn.execute(sql).fetchall()
    return len(rows), hashlib.sha256(repr(rows).encode()).hexdigest()


TOPICS = "SELECT topic, label, size, keywords FROM topics WHERE run_id = 'r1' ORDER BY topic"
LINKS = "SELECT kind, item_id, topic, weight, source FROM topic_links WHERE run_id = 'r1' ORDER BY kind, item_id"
EDGES = "SELECT kind, src, dst, weight FROM memory_edges ORDER BY kind, src, dst"

# The runner's side, in a process of its own: `chatmem run` without Prefect, Ctrl-C handling or the CLI.
RUNNER = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from contracts.settings import Settings
    from flows.stage_runner import run_stage_now
    from staging.archive import open_archive
    from staging.ledger import open_run, open_staging

    settings = Settings(data_dir=Path(sys.argv[1]))
    settings.cluster = settings.cluster.model_copy(update={"n_trials": 4})  # as test_cluster.small_settings
    archive, staging = open_archive(settings.archive_path), open_staging(settings.staging_path)
    when, run_id, report = "always", "r1", {}
    for stage in sys.argv[2:]:
        if stage == "--when-large":  # flows/stage_size.py decides, as `chatmem run` does
            when = "when large"
        elif stage.startswith("--run="):  # a next run, over the same data
            run_id = stage.removeprefix("--run=")
            open_run(staging, stages=["all"], exports=[], settings={}, code_version="test", run_id=run_id)
        else:
            done = run_stage_now(stage, archive, staging, run_id=run_id, settings=settings, own_process=when)
            report.setdefault("status", []).append(done.status)
            report.setdefault("imported_umap", []).append("umap" in sys.modules)
    print(json.dumps(report))
    """
)


def run_runner(data_dir: Path, *stages: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen(
        [sys.executable, "-c", RUNNER, str(data_dir), *stages],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )


@pytest.mark.timeout(900)  # cluster and cues twice, each compiling numba's kernels: minutes on a loaded machine
def test_cluster_and_cues_in_their_own_process_write_what_one_process_writes(prepared: Path, tmp_path: Path) -> None:
    """The same topics, links and memory edges, and the runner never imports UMAP: the stage ran elsewhere."""
    here = copy_of(prepared, tmp_path, "here")
    archive, staging = open_archive(here.archive_path), open_staging(here.staging_path)
    try:
        for stage in ("cluster", "cues"):
            assert run_stage_now(stage, archive, staging, run_id="r1", settings=here).status == "succeeded"
    finally:
        archive.close()
        staging.close()
    apart = copy_of(prepared, tmp_path, "apart")
    runner = run_runner(apart.data_dir, "cluster", "cues")
    out, err = runner.communicate(timeout=240)
    assert runner.returncode == 0, err
    report = json.loads(out.strip().splitlines()[-1])
    assert report == {"status": ["succeeded", "succeeded"], "imported_umap": [False, False]}
    assert digest(here, TOPICS)[0] >= 3 and digest(here, EDGES)[0] > 0  # a real clustering and memory
    for sql in (TOPICS, LINKS, EDGES):
        assert digest(apart, sql) == digest(here, sql)


@pytest.mark.timeout(900)
def test_a_first_run_gets_a_process_and_a_small_next_run_stays_in_the_runner(prepared: Path, tmp_path: Path) -> None:
    """WHEN_LARGE, what `chatmem run` asks for (flows/stage_size.py): the first cluster run is large and runs
    elsewhere (the runner never imports UMAP); the next run, with no segment changed since the fit, places what is
    new in the saved model in the runner's own process (reading the model imports UMAP there)."""
    settings = copy_of(prepared, tmp_path, "when-large")
    runner = run_runner(settings.data_dir, "--when-large", "cluster", "--run=r2", "cluster")
    out, err = runner.communicate(timeout=600)
    assert runner.returncode == 0, err
    report = json.loads(out.strip().splitlines()[-1])
    assert report == {"status": ["succeeded", "succeeded"], "imported_umap": [False, True]}
    with sqlite3.connect(settings.staging_path) as conn:
        counts = [
            json.loads(c) for (c,) in conn.execute("SELECT counts FROM stage_runs WHERE stage = 'cluster' ORDER BY id")
        ]
    assert [c["incremental"] for c in counts] == [0, 1]


def test_a_failure_in_the_stage_process_is_the_same_error_and_ledger_row(prepared: Path, tmp_path: Path) -> None:
    """A stage that fails in its own process fails as it would in the runner's: the same StageError, the same
    recorded cause, the child's traceback kept as the cause for a bug report."""
    found: dict[str, tuple[str, str]] = {}
    for own_process in (NEVER, ALWAYS):
        settings = copy_of(prepared, tmp_path, f"broken-{own_process}")
        with sqlite3.connect(settings.staging_path) as conn:
            conn.execute("DROP TABLE embedding_items")  # what the cluster stage reads its points through
        archive, staging = open_archive(settings.archive_path), open_staging(settings.staging_path)
        try:
            with pytest.raises(StageError) as failed:
                run_stage_now("cluster", archive, staging, run_id="r1", settings=settings, own_process=own_process)
            row = staging.execute("SELECT status, error FROM stage_runs WHERE stage = 'cluster'").fetchone()
        finally:
            archive.close()
            staging.close()
        assert row[0] == "failed"
        said = settings.data_dir.name
        found[own_process] = (str(failed.value).replace(said, "D"), row[1].replace(said, "D"))
        if own_process == ALWAYS:
            assert "Traceback" in str(failed.value.__cause__.__cause__)  # StageError <- error <- child traceback
    assert found[ALWAYS] == found[NEVER]
    assert "embedding_items" in found[ALWAYS][1]


def test_a_killed_runner_takes_its_stage_process_with_it(prepared: Path, tmp_path: Path) -> None:
    """kill -9 of the runner while the stage runs elsewhere: the stage's process exits on its own, within
    seconds, rather than go on writing a run that will be resumed."""
    settings = copy_of(prepared, tmp_path, "killed")
    runner = run_runner(settings.data_dir, "cluster")
    child = None
    deadline = time.monotonic() + 60
    while child is None and time.monotonic() < deadline and runner.poll() is None:
        kids = Path(f"/proc/{runner.pid}/task/{runner.pid}/children").read_text().split()
        spawned = [int(k) for k in kids if b"spawn_main" in Path(f"/proc/{k}/cmdline").read_bytes()]
        child = spawned[0] if spawned else None  # the stage's process, once spawned
        time.sleep(0.1)
    assert child is not None, "the stage's process was never started"
    time.sleep(1.0)  # it is importing and clustering now
    runner.send_signal(signal.SIGKILL)
    runner.wait(10)
    gone_by = time.monotonic() + 10
    while time.monotonic() < gone_by and Path(f"/proc/{child}").exists() and not _zombie(child):
        time.sleep(0.1)
    assert not Path(f"/proc/{child}").exists() or _zombie(child), "the stage's process outlived its runner"


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"
    except OSError:
        return True


# --- the stage process's own behaviour, with a stage of a few lines (tests/stage_process_probe.py) -------------


def probe(tmp_path: Path, run_id: str) -> Outcome:
    settings = Settings(data_dir=tmp_path / "data")
    archive, staging = open_archive(settings.archive_path), open_staging(settings.staging_path)
    try:
        ctx = StageContext(stage="cues", run_id=run_id, settings=settings, archive=archive, staging=staging)
        return run_in_own_process("stage_process_probe", ctx, settings)
    finally:
        archive.close()
        staging.close()


def test_a_stage_process_that_dies_is_a_stage_error_with_the_rerun_command(tmp_path: Path) -> None:
    """Killed by the system (SIGKILL, as the OOM killer does): a StageError like any stage failure, so that the CLI
    says the run and the re-run command and `serve --watch` carries on (not a bare ChatmemError)."""
    with pytest.raises(StageError) as died:
        probe(tmp_path, "die")
    assert died.value.rerun_hint == "chatmem stage cues --run-id die"
    assert "exit status -9, killed by the system: out of memory?" in died.value.cause


def test_the_stage_process_masks_the_secrets_the_runner_knows(tmp_path: Path) -> None:
    """The child's Settings is unpickled, not validated: the secrets the runner remembered are sent along, so that
    its error texts and log lines are masked as the runner's are."""
    remember_secret(SECRET)
    outcome = probe(tmp_path, "secret")
    assert outcome.notes == ["the endpoint said: bad key ***"]


def test_signals_during_the_stage_process_start_up_are_the_runners(tmp_path: Path) -> None:
    """Ctrl-C or SIGTERM to the process group while the child still imports (before it ignores them) must not kill
    it nor print its KeyboardInterrupt traceback: it is the runner's to stop it."""
    done = threading.Event()

    def pester() -> None:
        while not done.is_set():
            for child in stage_processes():
                with contextlib.suppress(psutil.Error):
                    child.send_signal(signal.SIGINT)
                    child.send_signal(signal.SIGTERM)
            time.sleep(0.005)

    pestering = threading.Thread(target=pester, daemon=True)
    pestering.start()
    try:
        outcome = probe(tmp_path, "sleep-0.5")
    finally:
        done.set()
        pestering.join()
    assert outcome.rows_out == 1


def stage_processes() -> list[psutil.Process]:
    """This process's spawned children (not multiprocessing's resource tracker)."""
    found = []
    for child in psutil.Process().children():
        with contextlib.suppress(psutil.Error):
            if "spawn_main" in " ".join(child.cmdline()):
                found.append(child)
    return found


def test_the_hard_way_out_kills_the_stage_process(tmp_path: Path) -> None:
    """flows/interrupt.py's os._exit path kills the stage processes first (kill_stage_processes)."""
    failed: list[BaseException] = []

    def stage() -> None:
        try:
            probe(tmp_path, "sleep-60")
        except BaseException as exc:
            failed.append(exc)

    running = threading.Thread(target=stage)
    started = time.monotonic()
    running.start()
    while not stage_processes() and time.monotonic() - started < 30:
        time.sleep(0.05)
    kill_stage_processes()
    running.join(30)
    assert not running.is_alive() and time.monotonic() - started < 30
    assert isinstance(failed[0], StageError) and "exit status -9" in str(failed[0])


BAR_RUNNER = """
import sys
from pathlib import Path
sys.path[:0] = [{tests!r}, {root!r}]
from contracts.settings import Settings
from clients.stage import StageContext
from flows.progress import tqdm_bar
from flows.stage_process import run_in_own_process
from staging.archive import open_archive
from staging.ledger import open_staging
settings = Settings(data_dir=Path({data!r}))
archive, staging = open_archive(settings.archive_path), open_staging(settings.staging_path)
ctx = StageContext(stage="cues", run_id="bar", settings=settings, archive=archive, staging=staging, progress=tqdm_bar)
try:
    run_in_own_process("stage_process_probe", ctx, settings)
except KeyboardInterrupt:
    sys.stderr.write("stopped\\n")
"""


def test_a_stage_process_killed_on_ctrl_c_leaves_no_half_drawn_bar(tmp_path: Path) -> None:
    """A terminal (a real pty as stderr): the child draws its progress bar, Ctrl-C stops the runner, which kills the
    child; the bar's line is cleared before the runner writes on, so "stopped" starts a clean line. The killed child
    leaves no semaphore behind either (tqdm's default lock is a multiprocessing one: flows/progress.py)."""
    import fcntl
    import pty
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # a terminal 100 columns wide
    script = BAR_RUNNER.format(tests=str(ROOT / "tests"), root=str(ROOT), data=str(tmp_path / "data"))
    runner = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=slave, text=True)
    os.close(slave)
    try:
        assert runner.stdout is not None and runner.stdout.readline().strip() == "bar drawn"
        runner.send_signal(signal.SIGINT)
        runner.wait(60)
        screen = b""
        with contextlib.suppress(OSError):  # EIO once every writer of the pty is gone
            while chunk := os.read(master, 4096):
                screen += chunk
    finally:
        os.close(master)
        if runner.poll() is None:
            runner.kill()
    text = screen.decode("utf-8", "replace")
    assert "probe stage:" in text  # the child's bar reached the terminal
    assert text.endswith("\r\x1b[Kstopped\r\n")  # its line cleared, and no leaked semaphore's warning after


def test_a_stage_process_killed_on_ctrl_c_leaves_no_semaphore_of_a_librarys_bar(tmp_path: Path) -> None:
    """No terminal, no bars of ours: UMAP's layout still makes a tqdm (disabled), whose default lock is a
    multiprocessing semaphore; the child killed on Ctrl-C must not leave it for the resource tracker to warn about
    after the runner's own line."""
    script = BAR_RUNNER.format(tests=str(ROOT / "tests"), root=str(ROOT), data=str(tmp_path / "data"))
    script = script.replace('run_id="bar"', 'run_id="library-bar"').replace("progress=tqdm_bar", "progress=None")
    runner = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert runner.stdout is not None and runner.stdout.readline().strip() == "bar made"
        runner.send_signal(signal.SIGINT)
        _, err = runner.communicate(timeout=60)
    finally:
        if runner.poll() is None:
            runner.kill()
    assert err.strip() == "stopped", err
