#!/usr/bin/env bash
# The data dir the graph's labelled measures are taken on (issue 20): the 8 labelled exports of ../shared/data and
# the demo, `chatmem run --to cluster`, then both label sets scored (benchmarks/labels/README.md).
#
#   bash benchmarks/build_labelled.sh DATA_DIR        # from the repo root, chatmem on PATH; DATA_DIR is replaced
#
# Prints the run's last line and the measures against the dev labels and the held-out labels; every figure is
# written to DATA_DIR.dev.json and DATA_DIR.heldout.json. About 1.5 min on 2 quiet cores.
set -euo pipefail
. "$(dirname "$0")/python_of_chatmem.sh"  # PYTHON: the chatmem's own, no venv needed
DATA=${1:?usage: build_labelled.sh DATA_DIR}
S=../shared/data/exports
rm -rf "$DATA"
chatmem --data-dir "$DATA" -q run --to cluster \
  $S/chatgpt/spark-first/conversations.json $S/chatgpt/rainchinchao/conversations.json \
  $S/chatgpt/chatgpt2graph/examples/conversations.json $S/chatgpt/librechat-fixtures/chatgpt-export.json \
  $S/claude/claude-to-sqlite/tests/artifacts.json $S/claude/claude-to-sqlite/tests/example.json \
  $S/claude/claude-chat-viewer/testdata/claude-bakery-chat.json demo/longmemeval-demo.zip > "$DATA.run.out" 2>&1 \
  || { tail -20 "$DATA.run.out"; exit 1; }
tail -1 "$DATA.run.out"
$PYTHON benchmarks/bench_graph_quality.py --data-dir "$DATA" --out "$DATA.dev.json" --show 0
$PYTHON benchmarks/bench_graph_quality.py --data-dir "$DATA" --labels benchmarks/labels/heldout_labels.json \
  --out "$DATA.heldout.json" --show 0
