#!/usr/bin/env bash
# Runs every test suite of a build (GoogleTest units, lit compiler tests and
# end-to-end checks) and ends with one line: 'N passed, M failed'.
set -uo pipefail

BUILD=${1:?usage: tests/run-all.sh BUILD_DIR}
shift
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LIT=/usr/lib/llvm-19/build/utils/lit/lit.py
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
# Compiled modules persist between processes (the kernel cache): the suites
# share a fresh one of their own, so a run starts cold, exercises both the
# compiling and the loading path, and writes nothing to the user's cache.
export DYNB_CACHE_DIR="$OUT/kernel-cache"

# DYNB_TEST_SUITES (unit suites, space-separated) and DYNB_TEST_LIT=0 narrow
# the run (tools/dev test --sanitize=thread runs the runtime's suite alone).
read -r -a UNIT_SUITES <<<"${DYNB_TEST_SUITES:-dynb-batching-tests dynb-runtime-tests dynb-compiler-tests dynb-engine-tests}"
passed=0
failed=0
problems=()

count_gtest() { # json -> "passed failed"
  python3 - "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
t, f = d.get("tests", 0), d.get("failures", 0) + d.get("errors", 0)
print(t - f - d.get("disabled", 0), f)
PY
}

for suite in "${UNIT_SUITES[@]}"; do
  exe="$BUILD/bin/$suite"
  echo "== $suite"
  if [[ ! -x "$exe" ]]; then
    problems+=("$suite: not built")
    failed=$((failed + 1))
    continue
  fi
  "$exe" --gtest_brief=1 --gtest_output="json:$OUT/$suite.json" 2>&1 | tail -n 25
  if [[ ! -s "$OUT/$suite.json" ]]; then
    problems+=("$suite: crashed before writing results")
    failed=$((failed + 1))
    continue
  fi
  read -r p f < <(count_gtest "$OUT/$suite.json")
  passed=$((passed + p))
  failed=$((failed + f))
  [[ $f -eq 0 ]] || problems+=("$suite: $f failed")
done

if [[ "${DYNB_TEST_LIT:-1}" == 0 ]]; then
  echo "== lit: not run (DYNB_TEST_LIT=0)"
else
  echo "== lit (tests/lit, tests/e2e)"
  python3 "$LIT" -sv --output "$OUT/lit.json" "$@" "$BUILD/tests" 2>&1 | tail -n 40
  if [[ -s "$OUT/lit.json" ]]; then
    read -r p f < <(python3 - "$OUT/lit.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ok = {"PASS", "XFAIL", "UNSUPPORTED"}
p = sum(1 for t in d["tests"] if t["code"] in ok)
print(p, len(d["tests"]) - p)
PY
)
    passed=$((passed + p))
    failed=$((failed + f))
    [[ $f -eq 0 ]] || problems+=("lit: $f failed")
  else
    problems+=("lit: produced no results")
    failed=$((failed + 1))
  fi
fi

# The Python module's tests (python/tests, pytest). A sanitized module
# cannot load into the uninstrumented interpreter, and DYNB_TEST_PYTHON=0
# skips them (the TSan run, which builds neither).
sanitized=$(sed -n 's/^DYNB_SANITIZE:STRING=//p' "$BUILD/CMakeCache.txt" 2>/dev/null)
if [[ "${DYNB_TEST_PYTHON:-1}" == 0 || -n "$sanitized" ]]; then
  echo "== python: not run (${sanitized:+sanitized build }${sanitized:-DYNB_TEST_PYTHON=0})"
else
  echo "== python (python/tests)"
  if ! compgen -G "$BUILD/python/dynb/_dynb*.so" >/dev/null; then
    problems+=("python: the module is not built (python3-pybind11 and python3-dev: tools/dev deps)")
    failed=$((failed + 1))
  else
    # The interpreter the module was built for (CMake's Python3_EXECUTABLE).
    python=$(sed -n 's/^Python3_EXECUTABLE:FILEPATH=//p' "$BUILD/CMakeCache.txt")
    DYNB_BUILD_DIR="$BUILD" PYTHONPATH="$BUILD/python:$ROOT/python/tests${PYTHONPATH:+:$PYTHONPATH}" \
      "${python:-python3}" -m pytest -q -p no:cacheprovider --junitxml="$OUT/pytest.xml" "$ROOT/python/tests" 2>&1 | tail -n 25
    if [[ -s "$OUT/pytest.xml" ]]; then
      read -r p f < <(python3 - "$OUT/pytest.xml" <<'PY'
import sys
import xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
suites = [root] if root.tag == "testsuite" else list(root)
t = sum(int(s.get("tests", 0)) for s in suites)
f = sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites)
print(t - f, f)
PY
)
      passed=$((passed + p))
      failed=$((failed + f))
      [[ $f -eq 0 ]] || problems+=("python: $f failed")
    else
      problems+=("python: pytest produced no results")
      failed=$((failed + 1))
    fi
  fi
fi

for p in "${problems[@]+"${problems[@]}"}"; do echo "FAILED: $p"; done
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
