#!/usr/bin/env bash
# Sets up, builds and runs the tuner on GPU 0 with the default sweep; extra arguments go to
# reduce-tune (e.g. --sizes 2^24 --format csv).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh >/dev/null
exec build/reduce-tune --device 0 "$@"
