#!/usr/bin/env bash
# W7 start-up time: `partrain -e ''` against `python3 -c 'import torch'`.
#   bench/w7_startup.sh partrain [BUILD_DIR]   (default BUILD_DIR: build)
#   bench/w7_startup.sh torch
#   bench/w7_startup.sh                        (both)
# Prints "METRIC w7_startup_ms <median> ms" for each side run. Uses hyperfine when installed
# (median of its runs), else the median of RUNS (default 50) timed runs after 3 warm-ups (hyperfine: 5).
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-50}

median_ms() { # command...: median wall time in ms
  if command -v hyperfine >/dev/null 2>&1; then
    local json
    json=$(mktemp)
    hyperfine -N --warmup 5 --runs "$RUNS" --export-json "$json" "$(printf '%q ' "$@")" >/dev/null 2>&1
    # hyperfine's JSON holds the median in seconds
    sed -n 's/.*"median": *\([0-9.eE+-]*\).*/\1/p' "$json" | head -n 1 |
      awk '{ printf "%.2f\n", $1 * 1000 }'
    rm -f "$json"
  else
    local i t0 t1 times=()
    for i in 1 2 3; do "$@" >/dev/null 2>&1; done
    for ((i = 0; i < RUNS; i++)); do
      t0=$(date +%s%N)
      "$@" >/dev/null 2>&1
      t1=$(date +%s%N)
      times+=($(((t1 - t0) / 1000)))
    done
    printf '%s\n' "${times[@]}" | sort -n |
      awk '{ a[NR] = $1 } END { m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2;
                                 printf "%.2f\n", m / 1000 }'
  fi
}

run_partrain() {
  local dir=${1:-build}
  if [ ! -x "$dir/partrain" ]; then
    echo "w7_startup: $dir/partrain not found (build first: cmake -S . -B $dir && cmake --build $dir)" >&2
    exit 1
  fi
  "$dir/partrain" -e '' || { echo "w7_startup: '$dir/partrain -e \"\"' failed" >&2; exit 1; }
  echo "METRIC w7_startup_ms $(median_ms "$dir/partrain" -e '') ms"
}

run_torch() {
  /usr/bin/python3 -c 'import torch' 2>/dev/null ||
    { echo "w7_startup: /usr/bin/python3 cannot import torch (apt-get install python3-torch)" >&2; exit 1; }
  echo "METRIC w7_startup_ms $(median_ms /usr/bin/python3 -c 'import torch') ms"
}

case "${1:-both}" in
  partrain) run_partrain "${2:-build}" ;;
  torch) run_torch ;;
  both) run_partrain "${2:-build}"; run_torch ;;
  *) echo "usage: bench/w7_startup.sh [partrain [BUILD_DIR] | torch]" >&2; exit 2 ;;
esac
