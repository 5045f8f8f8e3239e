#!/usr/bin/env bash
# One command, fresh machine: set everything up, then run the main job on generated data.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/scripts/setup.sh"
cd "$root"
windowstore demo "$@"
