#!/usr/bin/env bash
# Smoke test of built distributions, installed the way a user without Rust installs them:
# each wheel given is installed into its own fresh virtual environment (no Rust, no maturin,
# no pyspark, no PYTHONPATH, PATH holding only the environment's bin/), and scripts/smoke.py
# runs there. Any wrong result fails the script.
#
#   scripts/smoke.sh target/dist/windowstore-*.whl
#
# scripts/check.sh runs it on the release wheel and on a wheel built from the sdist.
# pip takes the wheel's dependencies (pyarrow, numpy) from the package index, at the versions
# requirements-dev.txt pins (so a warm pip cache serves them).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${SMOKE_PYTHON:-python3}"

if [ "$#" -eq 0 ]; then
  echo "usage: scripts/smoke.sh WHEEL..." >&2
  exit 2
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

n=0
for wheel in "$@"; do
  case "$wheel" in
    *.whl) ;;
    *) echo "smoke: $wheel is not a wheel" >&2; exit 2 ;;
  esac
  wheel="$(cd "$(dirname "$wheel")" && pwd)/$(basename "$wheel")"
  n=$((n + 1))
  venv="$work/venv$n"
  echo "smoke: $(basename "$wheel") in a fresh virtual environment ($venv)" >&2
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    --constraint "$root/requirements-dev.txt" "$wheel"
  # Only the environment's own programs on PATH; nothing from this checkout importable.
  (cd "$work" && env -i HOME="$work" LANG=C.UTF-8 PATH="$venv/bin" \
    "$venv/bin/python" -I "$root/scripts/smoke.py" "$wheel")
done
