"""Ask a benchmark's questions of a memory `chatmem eval recall` already built (no pipeline run): the same
memory.evaluate.evaluate as `chatmem eval recall --json`, with RecallSettings overrides, for quick iterations.

    python benchmarks/eval_built_memory.py longmemeval '{"session_prior": 1.0}' [--abl] [--cats] [--dump FILE]

DATA_ROOT: the data dir given to `chatmem eval recall` (default benchmarks/out/recall); its work dir
eval/<benchmark>-<digest>-all must hold a cues run. CODE_ROOT: another checkout's code (to measure it on the same
memory). The loaded index is cached in benchmarks/out/cache_<benchmark>_<CACHE_TAG>.pkl (delete after a change).
Dev files only; nothing here tunes anything by itself.
"""

import json
import os
import pickle
import sys
import time
from pathlib import Path

sys.path.insert(0, os.environ.get("CODE_ROOT", str(Path(__file__).resolve().parents[1])))
from clients.embedders import build_embedder
from contracts.settings import Settings
from flows.cli_data import open_readonly
from flows.cli_eval_recall import work_dir
from memory.benchmarks import read_benchmark
from memory.evaluate import ablations, evaluate, flat_vectors, plain_keys
from memory.index import key_embedder, load_index, run_embedder
from staging import memory as memory_store

BENCH_DIR = os.environ.get("BENCH_DIR", str(Path(__file__).resolve().parents[2] / "shared/data/benchmarks"))
FILES = {  # BENCH_DIR: ../shared/data/benchmarks beside the checkout unless set
    "locomo": f"{BENCH_DIR}/locomo/locomo_dev2.json",
    "longmemeval": f"{BENCH_DIR}/longmemeval/longmemeval_s_dev50.jsonl.gz",
}
DATA = Path(os.environ.get("DATA_ROOT", str(Path(__file__).resolve().parent / "out" / "recall")))


def load(bench, rebuild=False):
    cache = Path(__file__).resolve().parent / "out" / f"cache_{bench}_{os.environ.get('CACHE_TAG', 'new')}.pkl"
    base = Settings(data_dir=DATA)
    loaded = read_benchmark(bench, Path(FILES[bench]), None)
    where = work_dir(base, bench, Path(FILES[bench]), None)
    with open_readonly(where / "staging.db", base) as staging:
        base, _ = run_embedder(base, staging)  # `auto`: the model the built memory's keys were embedded with
    if cache.exists() and not rebuild:
        index, plain, flat = pickle.loads(cache.read_bytes())
    else:
        settings = base.model_copy(update={"data_dir": where})
        with (
            open_readonly(settings.archive_path, settings) as archive,
            open_readonly(settings.staging_path, settings) as staging,
        ):
            index = load_index(archive, staging, settings, key_embedder(settings))
            graph = memory_store.read_run(staging, index.run_id)
            flat = flat_vectors(staging, index, build_embedder(settings.embed))
        plain = plain_keys(index, graph)
        cache.write_bytes(pickle.dumps((index, plain, flat)))
    return base, loaded, index, plain, flat


HEAD = {
    "locomo": ["evidence_recall@5", "evidence_recall@10", "evidence_recall@20"],
    "longmemeval": ["recall_all@1", "recall_all@3", "recall_all@5", "recall_all@10", "ndcg@10"],
}


def show(bench, report, names):
    for n in names:
        r = report[n]
        print(f"{n:28s}", " ".join(f"{r[h]:.3f}" for h in HEAD[bench]), f"p95 {r['latency_p95_ms']}")


if __name__ == "__main__":
    bench = sys.argv[1]
    extra = json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}
    abl = "--abl" in sys.argv
    cats = "--cats" in sys.argv
    base, loaded, index, plain, flat = load(bench, "--rebuild" in sys.argv)
    emb = key_embedder(base)
    ms = base.recall.model_copy(update=extra)
    t = time.time()
    variants = ablations(index, plain, ms) if abl else None
    rep = evaluate(
        loaded,
        index,
        emb,
        ms,
        plain,
        flat_embedder=build_embedder(base.embed),
        flat_dense=flat,
        budget_tokens=4000,
        ablations=variants,
    )
    show(bench, rep, ["system", "bm25", "dense", "rrf", *(variants or {})])
    if cats:
        for c, v in rep["system"]["categories"].items():
            print(
                "  ",
                c,
                v["questions"],
                " ".join(f"{v[h]:.3f}" for h in HEAD[bench]),
                "| rrf",
                " ".join(f"{rep['rrf']['categories'][c][h]:.3f}" for h in HEAD[bench]),
            )
    print(f"{time.time() - t:.1f}s")
    if "--dump" in sys.argv:
        names = ("system", "bm25", "dense", "rrf", "dense_keys", "rrf_keys")
        out = {n: rep[n] for n in names}
        if variants:
            out["ablations"] = {n: rep[n] for n in variants}
        out["run"] = {
            "work_dir": str(DATA),
            "turns": index.size,
            "questions": len(loaded.questions),
            "embedder_system": emb.key,
            "embedder_baselines": build_embedder(base.embed).key,
            "budget_tokens": 4000,
            "notes": loaded.notes,
            "stages": {},
            "pipeline_s": 0.0,
        }
        Path(sys.argv[sys.argv.index("--dump") + 1]).write_text(json.dumps(out, indent=2))
