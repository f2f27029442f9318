"""Re-run only the cues stage of a memory `chatmem eval recall` built, with this checkout's code, in a new run.

    python benchmarks/rebuild_cues.py WORK_DIR ['{"hypernym_depth": 0}']

WORK_DIR: the eval work dir (DATA_ROOT/eval/<benchmark>-<digest>-all). The flows' skip rule is not consulted and
no other stage runs (a change under contracts/ would otherwise re-run every stage: minutes to an hour on this
machine); the new cues run becomes the latest, so `benchmarks/eval_built_memory.py` asks it. The second argument
overrides memory settings for this build (an ablation of the build, e.g. no WordNet categories). Dev use only.
"""

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from contracts.settings import Settings
from contracts.version import code_version
from flows.stage_runner import run_stage_now
from staging.archive import open_archive
from staging.ledger import open_run, open_staging

if __name__ == "__main__":
    where = Path(sys.argv[1])
    extra = json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}
    base = Settings(data_dir=where)
    settings = base.model_copy(update={"memory": base.memory.model_copy(update=extra)})
    archive, staging = open_archive(settings.archive_path), open_staging(settings.staging_path)
    run_id = open_run(staging, stages=["cues"], exports=[], settings={}, code_version=code_version())
    started = time.monotonic(), time.process_time()
    result = run_stage_now("cues", archive, staging, run_id=run_id, settings=settings)
    wall, cpu = time.monotonic() - started[0], time.process_time() - started[1]
    print(json.dumps({"run_id": run_id, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "counts": result.counts}))
    print("\n".join(result.notes))
