#!/usr/bin/env bash
# Sets up everything windowstore needs on a fresh machine, idempotently:
# Rust components, Java/Maven (for the Kafka Streams oracle and the Kafka broker of the Spark
# tests, whose jars Maven resolves on first use), a .venv with the pinned tools of
# requirements-dev.txt, and the windowstore wheel built once from this checkout (release
# profile, into target/dist) and installed into .venv.
# Source it (". scripts/setup.sh") or run it; scripts/demo.sh and scripts/check.sh call it.
# Each step prints its name and, when it ends, its duration (scripts/steps.sh).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
source "$root/scripts/steps.sh"

if ! command -v cargo >/dev/null; then
  echo "cargo is required (https://rustup.rs); it is not on PATH" >&2
  exit 1
fi
step "setup: Rust components, Java 17 and Maven"
if command -v rustup >/dev/null; then
  for component in rustfmt clippy; do
    rustup component list --installed 2>/dev/null | grep -q "^$component" \
      || rustup component add "$component" >&2
  done
fi
if ! command -v mvn >/dev/null || ! command -v java >/dev/null; then
  echo "installing Java 17 and Maven (for the Kafka Streams oracle and the Kafka broker)" >&2
  if command -v apt-get >/dev/null; then
    apt-get update -qq >&2 && apt-get install -y -qq openjdk-17-jdk-headless maven >&2
  else
    echo "Java 17 and Maven are required for the conformance tests" >&2
  fi
fi

python="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  step "setup: create .venv with $("$python" --version)"
  "$python" -m venv .venv
fi
export PATH="$root/.venv/bin:$PATH"
export PYO3_PYTHON="$root/.venv/bin/python"
# maturin sets this for the extension build; setting it for every cargo call too keeps one
# pyo3 build configuration in target/ instead of two: clippy, the tests and the wheel share
# the release profile's dependencies.
export PYO3_BUILD_EXTENSION_MODULE=1

# requirements-dev.txt is the one list of development tools, pinned (pyproject.toml has no
# dev extra): a fresh clone and CI install exactly these versions. requirements-docs.txt (the
# documentation tools, for scripts/docs.sh) is installed the same way when present.
for requirements in requirements-dev.txt requirements-docs.txt; do
  [ -f "$requirements" ] || continue
  stamp=".venv/.$requirements"
  if ! cmp -s "$requirements" "$stamp"; then
    step "setup: install the pinned tools of $requirements into .venv"
    python -m pip install --progress-bar off --upgrade pip >&2
    python -m pip install --progress-bar off -r "$requirements" >&2
    cp "$requirements" "$stamp"
  fi
done

# The one release build of the extension: scripts/check.sh smoke-tests this same wheel in a
# fresh virtual environment.
step "setup: build the windowstore wheel (release profile, target/dist)"
rm -rf target/dist
maturin build --release --locked --out target/dist --interpreter "$PYO3_PYTHON" >&2
wheel="$(ls target/dist/windowstore-*.whl)"
step "setup: install $(basename "$wheel") into .venv"
python -m pip install --progress-bar off --no-deps --force-reinstall "$wheel" >&2
