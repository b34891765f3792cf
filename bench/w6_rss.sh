#!/usr/bin/env bash
# W6: peak RSS of the MLP recipe on all of Fashion-MNIST (one epoch and the test evaluation).
#   bench/w6_rss.sh partrain BUILD_DIR    |    bench/w6_rss.sh torch
# Prints METRIC w6_peak_rss_mb <MB> MB (from /usr/bin/time's maximum resident set size).
set -euo pipefail
cd "$(dirname "$0")/.."
side=${1:-partrain}
build=${2:-build}
out=$(mktemp)
trap 'rm -f "$out" /tmp/w6_mlp.safetensors' EXIT
if [ "$side" = partrain ]; then
  PARTRAIN_PROGRESS=0 /usr/bin/time -f "%M" -o "$out" "$build/partrain" scripts/fashion_mnist_mlp.lua 1 /tmp/w6_mlp.safetensors >/dev/null
else
  /usr/bin/time -f "%M" -o "$out" /usr/bin/python3 bench/mlp_recipe_torch.py >/dev/null
fi
kb=$(tail -n 1 "$out")
echo "METRIC w6_peak_rss_mb $((kb / 1024)) MB"
