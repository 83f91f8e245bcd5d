#!/usr/bin/env bash
# Generates the data files the shipped cases read (not kept in git): the Cole-Hopf reference
# of the Burgers cases and the noisy observations of the inverse cases. Skips files that
# already exist.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p cases/data
if [ ! -f cases/data/burgers_reference.h5 ]; then
  /usr/bin/python3 tools/burgers_reference.py --out cases/data/burgers_reference.h5 >/dev/null
fi
# inverse_burgers: 2,000 reference nodes with 1% noise (Raissi et al. 2019).
if [ ! -f cases/data/burgers_observations.h5 ]; then
  /usr/bin/python3 tools/make_observations.py --reference cases/data/burgers_reference.h5 \
    --coordinates x t --fields u --points 2000 --noise 0.01 --seed 1 \
    --out cases/data/burgers_observations.h5 >/dev/null
fi
# validation/burgers_inverse: the same 2,000 nodes without noise (Raissi et al.'s noise-free
# column; with 1% noise the error in nu depends mostly on the draw: docs/validation.md).
if [ ! -f cases/data/burgers_observations_exact.h5 ]; then
  /usr/bin/python3 tools/make_observations.py --reference cases/data/burgers_reference.h5 \
    --coordinates x t --fields u --points 2000 --noise 0 --seed 1 \
    --out cases/data/burgers_observations_exact.h5 >/dev/null
fi
# inverse_heat_ddp: 1,000 points of the exact solution (kappa = 0.1) with 1% noise.
if [ ! -f cases/data/heat_observations.h5 ]; then
  /usr/bin/python3 tools/make_observations.py --domain x=0:1 --domain t=0:1 \
    --exact 'u=sin(pi*x)*exp(-0.1*pi^2*t)' --points 1000 --noise 0.01 --seed 2 \
    --out cases/data/heat_observations.h5 >/dev/null
fi
# heat_variable: the 129 x 129 diffusivity table and the finite-volume reference.
if [ ! -f cases/data/heat_kappa.h5 ] || [ ! -f cases/data/heat_variable_reference.h5 ]; then
  /usr/bin/python3 tools/reference/variable_heat.py --table cases/data/heat_kappa.h5 \
    --out cases/data/heat_variable_reference.h5 >/dev/null
fi
# inverse_coefficient(_penalty): 1,000 points of their u with 1% noise.
if [ ! -f cases/data/coefficient_observations.h5 ]; then
  /usr/bin/python3 tools/make_observations.py --domain x=0:1 --domain y=0:1 --domain t=0:1 \
    --exact 'u=exp(-t)*sin(pi*x)*sin(pi*y) + 0.5*exp(-3*t)*sin(2*pi*x)*sin(2*pi*y)' \
    --points 1000 --noise 0.01 --seed 3 \
    --out cases/data/coefficient_observations.h5 >/dev/null
fi
