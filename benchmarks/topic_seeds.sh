#!/usr/bin/env bash
# The topics' agreement with the blind labels over several seeds (RESULTS.md "Session 31": one seed is no figure).
#
#   bash benchmarks/topic_seeds.sh BUILT_DIR 42 7 11 3 5      # from the repo root, chatmem on PATH
#
# BUILT_DIR: a labelled build (`bash benchmarks/build_labelled.sh DIR`), left as it is. For each seed, a copy
# BUILT_DIR-seed-S gets its cluster stage run again with CHATMEM_CLUSTER__SEED=S (--force: tuned and fitted anew; the
# topic texts' vectors are cached, so ~2-5 min a seed on 2 cores), then both label sets and the two larger blind
# groupings (benchmarks/labels/topic_grouping_{spark,demo}.json: 200 + 160 conversations, topics only) are scored.
# Prints one line a seed: AMI over the conversations with a topic (and over all of them, conversations in no topic),
# topics, largest topic.
set -euo pipefail
. "$(dirname "$0")/python_of_chatmem.sh"  # PYTHON: the chatmem's own, no venv needed
BUILT=${1:?usage: topic_seeds.sh BUILT_DIR SEED...}
shift
for S in "$@"; do
  D="$BUILT-seed-$S"
  rm -rf "$D"
  cp -r "$BUILT" "$D"
  RUN=$($PYTHON -c "import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT run_id FROM cluster_runs ORDER BY run_id DESC LIMIT 1').fetchone()[0])" "$D/staging.db")
  CHATMEM_CLUSTER__SEED=$S chatmem --data-dir "$D" -q stage cluster --run-id "$RUN" --force > "$D.out" 2>&1 \
    || { tail -5 "$D.out"; continue; }
  $PYTHON benchmarks/bench_graph_quality.py --data-dir "$D" --out "$D.dev.json" --show 0 > /dev/null
  $PYTHON benchmarks/bench_graph_quality.py --data-dir "$D" --labels benchmarks/labels/heldout_labels.json \
    --out "$D.heldout.json" --show 0 > /dev/null
  for G in spark demo; do
    $PYTHON benchmarks/bench_graph_quality.py --data-dir "$D" --labels "benchmarks/labels/topic_grouping_$G.json" \
      --out "$D.$G.json" > /dev/null
  done
  $PYTHON - "$D" "$S" <<'PY'
import json, sys
d, s = sys.argv[1:]
r = {k: json.load(open(f"{d}.{k}.json")) for k in ("dev", "heldout", "spark", "demo")}
parts = [f"{k} {v['topic_ami']:.3f} (all {v['topic_ami_all']:.3f}, {v['conversations_without_topic']} in no topic)"
         for k, v in r.items()]
print(f"seed {s}: AMI " + " | ".join(parts) + f" | {r['dev']['topics']} topics, largest {r['dev']['largest_topic_share']:.3f}",
      flush=True)
PY
done
