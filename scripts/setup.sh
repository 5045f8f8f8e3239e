#!/usr/bin/env bash
# Sets up everything windowstore needs on a fresh machine, idempotently:
# Rust components, Java/Maven (for the Kafka Streams oracle), a .venv with pinned tools,
# and the windowstore wheel built from this checkout and installed into .venv.
# Source it (". scripts/setup.sh") or run it; scripts/demo.sh and scripts/check.sh call it.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

log() { printf '==> %s\n' "$*" >&2; }

if ! command -v cargo >/dev/null; then
  echo "cargo is required (https://rustup.rs); it is not on PATH" >&2
  exit 1
fi
if command -v rustup >/dev/null; then
  for component in rustfmt clippy; do
    rustup component list --installed 2>/dev/null | grep -q "^$component" \
      || rustup component add "$component" >&2
  done
fi
if ! command -v mvn >/dev/null || ! command -v java >/dev/null; then
  log "installing Java 17 and Maven (for the Kafka Streams conformance oracle)"
  if command -v apt-get >/dev/null; then
    apt-get update -qq >&2 && apt-get install -y -qq openjdk-17-jdk-headless maven >&2
  else
    echo "Java 17 and Maven are required for the conformance tests" >&2
  fi
fi

python="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  log "creating .venv with $("$python" --version)"
  "$python" -m venv .venv
fi
export PATH="$root/.venv/bin:$PATH"
export PYO3_PYTHON="$root/.venv/bin/python"
# maturin sets this for the extension build; setting it for every cargo call too keeps one
# pyo3 build configuration in target/ instead of two.
export PYO3_BUILD_EXTENSION_MODULE=1

stamp=.venv/.requirements-dev.txt
if ! cmp -s requirements-dev.txt "$stamp"; then
  log "installing pinned tools into .venv"
  python -m pip install -q --upgrade pip >&2
  python -m pip install -q -r requirements-dev.txt >&2
  cp requirements-dev.txt "$stamp"
fi

log "building and installing the windowstore wheel (release profile)"
python -m pip install -q --no-build-isolation --no-deps --force-reinstall . >&2
