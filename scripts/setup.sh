#!/usr/bin/env bash
# Install what is missing (Debian 12, as root), then configure and build partrain in build/.
set -euo pipefail
cd "$(dirname "$0")/.."

PKGS=(build-essential cmake pkg-config lua5.4 liblua5.4-dev libopenblas-dev liblapacke-dev libdnnl2 libffi-dev
      zlib1g-dev libreadline-dev libcjson-dev libsleef-dev libpng-dev libjpeg62-turbo-dev lua-busted dataset-fashion-mnist
      python3 python3-numpy)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-Release} ${CMAKE_ARGS:-} >/dev/null
cmake --build "$BUILD_DIR" -j"$(nproc)"
