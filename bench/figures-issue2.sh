#!/usr/bin/env bash
# The figures quoted in README.md's Performance section and the issue note:
# a few points of the TreeLSTM grid, the GEMM ceiling and the memory check,
# in about a minute. usage: bench/figures-issue2.sh [BUILD_DIR]
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
B=$(cd "${1:-$ROOT/build}" && pwd)
W=$B/bench/work
export GOMP_SPINCOUNT=${GOMP_SPINCOUNT:-10000}
mkdir -p $W
for h in 8 256 512; do [ -f $W/sst-dev-h$h.jsonl ] || $B/bin/sst2dynb $ROOT/examples/treelstm/data/sst/dev.txt --hdim $h -o $W/sst-dev-h$h.jsonl; done
[ -f $W/sst-train-h256.jsonl ] || $B/bin/sst2dynb $ROOT/examples/treelstm/data/sst/train.txt --hdim 256 -o $W/sst-train-h256.jsonl
echo "### hdim 256, batch 64"
$B/bin/dynbc run $W/sst-dev-h256.jsonl --seed 1 --strategy=none --batch-size 64 --repeat 1 --profile --report $W/f-h256-b64-none.json
$B/bin/dynbc run $W/sst-dev-h256.jsonl --seed 1 --strategy=depth,agenda --batch-size 64 --repeat 3 --profile --report $W/f-h256-b64.json
echo "### hdim 256, agenda, batch 16 and 256"
for b in 16 256; do $B/bin/dynbc run $W/sst-dev-h256.jsonl --seed 1 --strategy=agenda --batch-size $b --repeat 3 --profile --report $W/f-h256-b$b.json | sed -n 3,4p; done
echo "### hdim 512, batch 64"
$B/bin/dynbc run $W/sst-dev-h512.jsonl --seed 1 --strategy=depth,agenda --batch-size 64 --repeat 3 --profile --report $W/f-h512-b64.json
echo "### hdim 8, batch 64 (overhead)"
$B/bin/dynbc run $W/sst-dev-h8.jsonl --seed 1 --strategy=all --batch-size 64 --repeat 5 --profile --report $W/f-h8-b64.json
echo "### GEMM ceiling (static batch M=4096)"
$B/bin/dynb-gemm-ceiling 4096 256 768 4096 512 768 4096 256 256 4096 512 1536 4096 1024 1536 4096 512 512
echo "### memory: SST train, hdim 256, agenda, 134 batches of 64"
$B/bin/dynbc run $W/sst-train-h256.jsonl --seed 1 --strategy=agenda --batch-size 64 --repeat 1 --report $W/f-train.json
python3 -c "
import json; r=json.load(open('$W/f-train.json'))['results'][0]; a=r['rss_after_batch_bytes']
print('batches', r['batches'], 'peak RSS MiB %.1f' % (r['peak_rss_bytes']/2**20), 'arena MiB %.1f' % (r['arena_bytes']/2**20))
print('RSS after batch 10/20/40/80/134 (MiB):', ['%.1f' % (a[i]/2**20) for i in (9,19,39,79,len(a)-1)])
print('growth batches 20-40 -> last 20: %.1f MiB, of which kept outputs (64 rows x 256 x 4 B a batch): %.1f MiB' % ((sum(a[-20:])/20 - sum(a[19:40])/21)/2**20, (len(a)-20/2-30)*64*256*4/2**20))
"
