#!/usr/bin/env bash
# Generates the data files the shipped cases read (not kept in git): the Cole-Hopf reference
# of the Burgers cases. Skips files that already exist.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p cases/data
if [ ! -f cases/data/burgers_reference.h5 ]; then
  /usr/bin/python3 tools/burgers_reference.py --out cases/data/burgers_reference.h5 >/dev/null
fi
