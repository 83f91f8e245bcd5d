#!/usr/bin/env bash
# Installs every Debian package Tessera needs to build, test and run.
# Idempotent: quiet and fast when everything is present.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config
  libtorch-dev libopenblas0-pthread
  mpich libmpich-dev
  libhdf5-mpich-dev hdf5-tools
  libcgal-dev libgmp-dev libmpfr-dev libboost-dev
  nlohmann-json3-dev doctest-dev
  python3-h5py python3-numpy python3-scipy python3-matplotlib
  python3-jsonschema  # tests/cases/check_schema.py validates the cases against `tessera schema`
  python3-torch  # tools/bench: the seed's PyTorch scripts run side by side with Tessera
  python3-paraview  # the pvpython tests (it brings OpenMPI too: Tessera's tests use mpiexec.mpich)
  clang-format black flake8  # tools/format.sh: clang-format 14 is Debian 12's
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "tools/setup.sh: installing ${missing[*]}"
sudo_cmd=""
[ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo_cmd apt-get update -qq
$sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "tools/setup.sh: done"
