#!/usr/bin/env bash
# One command, fresh machine: set everything up, then run the main job on generated data.
# Extra arguments go to `windowstore demo` (see `windowstore demo --help`).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/scripts/setup.sh"
cd "$root"
step "windowstore demo $*"
windowstore demo "$@"
steps_done
