#!/usr/bin/env bash
# Build and run every test: ctest (C unit tests of lib/) and the busted specs run inside
# partrain, then the same under ASan+UBSan. Ends with "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."

passed=0
failed=0

run_suite() { # $1 = build dir, $2 = label, $3... = spec files (default: all of spec/)
  local dir=$1 label=$2 out
  shift 2
  local specs=("$@")
  [ ${#specs[@]} -eq 0 ] && specs=(spec)
  echo "== $label: ctest"
  out=$(ctest --test-dir "$dir" --output-on-failure 2>&1)
  echo "$out" | tail -n 20
  local cp cf
  cp=$(echo "$out" | grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .* Passed')
  cf=$(echo "$out" | grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .*(Failed|Exception|Timeout|Not Run)')
  passed=$((passed + cp)); failed=$((failed + cf))
  echo "== $label: busted specs"
  out=$("$dir/partrain" /usr/bin/busted -o TAP "${specs[@]}" 2>&1)
  local rc=$?
  echo "$out" | grep -E '^(not ok|#)' | head -n 200
  local bp bf
  bp=$(echo "$out" | grep -cE '^ok ')
  bf=$(echo "$out" | grep -cE '^not ok ')
  # a crash ends the TAP stream early: count it as a failure
  if [ $rc -ne 0 ] && [ "$bf" -eq 0 ]; then bf=1; echo "busted exited with $rc"; fi
  passed=$((passed + bp)); failed=$((failed + bf))
  echo "== $label: $bp specs passed, $bf failed"
}

bash scripts/setup.sh || { echo "0 passed, 1 failed"; exit 1; }
run_suite build "release"

if [ "${PARTRAIN_SKIP_SANITIZERS:-0}" != 1 ]; then
  BUILD_DIR=build-asan BUILD_TYPE=Debug CMAKE_ARGS="-DPARTRAIN_SANITIZE=ON" bash scripts/setup.sh \
    || { echo "asan build failed"; failed=$((failed + 1)); }
  if [ -x build-asan/partrain ]; then
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 run_suite build-asan "asan+ubsan"
  fi
  # The dispatcher's specs (and everything that runs threads) under ThreadSanitizer.
  BUILD_DIR=build-tsan BUILD_TYPE=Debug CMAKE_ARGS="-DPARTRAIN_TSAN=ON" bash scripts/setup.sh \
    || { echo "tsan build failed"; failed=$((failed + 1)); }
  if [ -x build-tsan/partrain ]; then
    TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" run_suite build-tsan "tsan" \
      spec/par_spec.lua spec/par_step_spec.lua spec/par_partition_spec.lua spec/transfer_spec.lua spec/runner_spec.lua spec/inbatch_spec.lua \
      spec/process_spec.lua spec/async_spec.lua spec/data_workers_spec.lua $(ls spec/data_parallel_spec.lua 2>/dev/null) \
      spec/conv_spec.lua spec/autograd_function_spec.lua
  fi
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
