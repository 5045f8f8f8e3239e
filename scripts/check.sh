#!/usr/bin/env bash
# One command, fresh machine: set everything up, then run every check CI runs.
# Extra arguments go to pytest (for example: scripts/check.sh -m "not conformance").
# Every step prints its name and duration, and a summary of all of them comes last.
#
# One build profile (release) and one target directory serve clippy, the Rust tests, the
# wheel (built once by setup.sh into target/dist) and the wheel built from the sdist, so no
# dependency is compiled twice. PYTEST_WORKERS (default 2; 0 for one process) sets how many
# pytest-xdist workers run the Python tests: most Spark and Kafka oracle tests wait on JVMs
# more than they compute, so two workers overlap the waits (work-stealing, as a few streaming
# tests take minutes).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/scripts/setup.sh"
cd "$root"

step "cargo fmt --check"
cargo fmt --all -- --check
step "ruff"
ruff check python tests benches scripts
ruff format --check python tests benches scripts
step "layers: no module uses a sibling module that uses it back"
python scripts/check_layers.py
step "mypy"
mypy
step "stubtest: _core.pyi matches the compiled module"
python -m mypy.stubtest windowstore._core --mypy-config-file pyproject.toml

step "cargo clippy (release, all targets, warnings are errors)"
cargo clippy --release --workspace --all-targets -- -D warnings
step "cargo doc (release, no broken or private links)"
RUSTDOCFLAGS="-D warnings" cargo doc --release --no-deps --workspace
step "cargo test (release; proptest runs ${PROPTEST_CASES:-10000} cases)"
cargo test --release --workspace

step "smoke test: the release wheel in a fresh virtual environment"
bash scripts/smoke.sh target/dist/windowstore-*.whl

step "sdist: maturin sdist, then a wheel built from the sdist alone"
rm -rf target/sdist
maturin sdist --out target/sdist
sdist="$(ls target/sdist/windowstore-*.tar.gz)"
unpacked="$(mktemp -d)"
tar -xzf "$sdist" -C "$unpacked"
# Cargo hashes a path crate by its place in the workspace and takes the archive's old mtimes
# as unchanged sources: without a touch it would reuse the crates compiled from this checkout
# and never compile the sdist's own sources.
find "$unpacked" -type f -exec touch {} +
# The same target directory and profile as the wheel: only windowstore's own crates compile.
# No --locked, as for pip installing the sdist: its workspace lacks the benches, so cargo
# prunes their entries from the sdist's Cargo.lock (the versions it pins stay).
(cd "$unpacked"/windowstore-* \
  && CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}" \
    maturin build --release --out "$root/target/sdist" --interpreter "$PYO3_PYTHON")
rm -rf "$unpacked"
step "smoke test: the wheel built from the sdist in a fresh virtual environment"
bash scripts/smoke.sh target/sdist/windowstore-*.whl

step "docs (strict)"
bash scripts/docs.sh

workers="${PYTEST_WORKERS:-2}"
if [ "$workers" -gt 0 ]; then
  step "pytest ($workers workers)"
  python -m pytest -n "$workers" --dist worksteal --durations=15 "$@"
else
  step "pytest"
  python -m pytest --durations=15 "$@"
fi
steps_done
