#!/usr/bin/env bash
# One command, fresh machine: set everything up, then run every check CI runs.
# Extra arguments go to pytest (for example: scripts/check.sh -m "not conformance").
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/scripts/setup.sh"
cd "$root"

step() { printf '\n==> %s\n' "$*"; }

step "cargo fmt --check"
cargo fmt --all -- --check
step "cargo clippy (all targets, warnings are errors)"
cargo clippy --release --workspace --all-targets -- -D warnings
step "cargo test (release; proptest runs ${PROPTEST_CASES:-10000} cases)"
cargo test --release --workspace
step "ruff"
ruff check python tests benches
ruff format --check python tests benches
step "mypy"
mypy
step "stubtest: _core.pyi matches the compiled module"
python -m mypy.stubtest windowstore._core --mypy-config-file pyproject.toml
step "pytest"
python -m pytest "$@"
