#!/usr/bin/env bash
# install-deps.sh — installs the Debian packages offcore builds and tests with,
# only those that are missing (apt-get update first). Needs root or sudo.
set -euo pipefail
pkgs=(build-essential cmake pkg-config clang clang-format libclang-rt-dev
      liburing-dev libopenblas-dev libcjson-dev libyaml-dev zlib1g-dev libdeflate-dev libmetis-dev
      libopenmpi-dev openmpi-bin # train --distributed (mpirun) and tests/test_train_mpi.sh
      python3 python3-venv) # the Python package's tests run in a venv (tools/py-test.sh)
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    echo "install-deps: all packages present"
    exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
