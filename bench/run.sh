#!/usr/bin/env bash
# Benchmark dispatcher: bench/run.sh BUILD_DIR [WORKLOAD...] [OPTIONS...] runs the named workloads (default: all).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
KNOWN_WORKLOADS=(treelstm moe api clevr endtoend train python rounds)

usage() {
  cat <<USAGE
usage: bench/run.sh BUILD_DIR [WORKLOAD...] [OPTIONS...]

  Runs each WORKLOAD (default: all of them) against the tools in BUILD_DIR/bin.
  Arguments from the first one starting with '-' on go to every workload.
  Workloads: ${KNOWN_WORKLOADS[*]}
  treelstm options: --quick, --out DIR, --threads N, --trees N, --no-peers (see bench/README.md)
  moe options: --quick, --grid seed|lm|all, --out DIR, --threads N, --max-memory SIZE, --no-peers
  api options: --quick, --out DIR, --threads N, --trees N, --rounds N (the embedded API against dynbc)
  clevr options: --quick, --batches 16,64,256, --out DIR, --threads N, --repeat N, --no-peers
  endtoend options: --quick, --out DIR, --threads N, --copies N, --runs N (dynbc as a whole process)
  train options: --quick, --trees N, --eager-trees N, --hdims 128,256, --out DIR, --threads N, --no-peers
  python options: --quick, --out DIR, --threads N, --trees N, --rounds N (the Python module against the C++ API)
  rounds options: --quick, --out DIR, --threads N, --instances N, --hdim N (runTasks' cost a round)
  treelstm, moe, clevr and train run PyTorch peers on the same inputs and weights unless --no-peers.
USAGE
}

if [[ $# -lt 1 || "$1" == -h || "$1" == --help ]]; then
  usage
  [[ $# -ge 1 ]] && exit 0 || exit 2
fi
BUILD=$1
shift
if [[ ! -d "$BUILD" ]]; then
  echo "bench/run.sh: build directory '$BUILD' does not exist" >&2
  exit 2
fi

workloads=()
while [[ $# -gt 0 && "$1" != -* ]]; do
  known=0
  for w in "${KNOWN_WORKLOADS[@]}"; do [[ "$1" == "$w" ]] && known=1; done
  if [[ $known -eq 0 ]]; then
    echo "bench/run.sh: unknown workload '$1' (known: ${KNOWN_WORKLOADS[*]})" >&2
    exit 2
  fi
  workloads+=("$1")
  shift
done
[[ ${#workloads[@]} -eq 0 ]] && workloads=("${KNOWN_WORKLOADS[@]}")

PYTHON=python3
[[ -x /usr/bin/python3 ]] && PYTHON=/usr/bin/python3

for i in "${!workloads[@]}"; do
  name=${workloads[$i]}
  echo "== bench $((i + 1))/${#workloads[@]}: $name =="
  case "$name" in
    treelstm) "$PYTHON" "$HERE/treelstm.py" "$BUILD" "$@" ;;
    moe) "$PYTHON" "$HERE/moe.py" "$BUILD" "$@" ;;
    api) "$PYTHON" "$HERE/api.py" "$BUILD" "$@" ;;
    clevr) "$PYTHON" "$HERE/clevr.py" "$BUILD" "$@" ;;
    endtoend) "$PYTHON" "$HERE/endtoend.py" "$BUILD" "$@" ;;
    train) "$PYTHON" "$HERE/train.py" "$BUILD" "$@" ;;
    python) "$PYTHON" "$HERE/python_api.py" "$BUILD" "$@" ;;
    rounds) "$PYTHON" "$HERE/rounds.py" "$BUILD" "$@" ;;
  esac
done

# The report: docs/benchmarks.md, its charts and the README's headline
# table, from the latest full run of each workload (subsets and smoke tests
# write other files and never reach it).
echo "== report =="
"$PYTHON" "$HERE/report.py" "$BUILD/bench" --readme "$HERE/../README.md"
