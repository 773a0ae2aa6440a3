#!/usr/bin/env bash
# Installs the Debian packages tierscope needs to build and test, when any is missing.
# Idempotent and non-interactive; uses sudo only when not root.
set -euo pipefail

packages=(build-essential cmake ninja-build ccache pkg-config git clang libclang-rt-14-dev
          nlohmann-json3-dev libcli11-dev libzip-dev libgtest-dev zlib1g-dev
          libsimdjson-dev libsqlite3-dev libdeflate-dev libicu-dev libboost-dev wrk
          libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc libjs-chart.js
          python3 python3-venv python3-pip)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
echo "setup: every package is present (${#packages[@]} checked)"
