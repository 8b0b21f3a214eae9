#!/usr/bin/env bash
# The main job: the TreeLSTM of docs/workloads.md over the SST dev trees through
# dynbc, every strategy checked against the reference interpreter.
set -euo pipefail
BUILD=${1:?usage: tools/run-treelstm.sh BUILD_DIR [hdim] [batch]}
HDIM=${2:-256}
BATCH=${3:-64}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK="$BUILD/run"
mkdir -p "$WORK"
GRAPHS="$WORK/sst-dev-h$HDIM.jsonl"
"$BUILD/bin/sst2dynb" "$ROOT/examples/treelstm/data/sst/dev.txt" --hdim "$HDIM" -o "$GRAPHS"
echo "TreeLSTM (hdim $HDIM) on the SST dev trees, batches of $BATCH, seeded parameters"
exec "$BUILD/bin/dynbc" run "$GRAPHS" --seed 1 --strategy=all --batch-size "$BATCH" \
  --check --repeat 3 --output "$WORK/sst-dev-h$HDIM.npy"
