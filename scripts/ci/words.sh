#!/usr/bin/env bash
# CI: the repository speaks of itself. Fails, naming file:line, where a tracked text file outside
# docs/results/ (measurement archives, kept as recorded) uses words of the environment it was
# developed in instead of the project's own: borrowed machines and their kind names, work sessions,
# tracker issue numbers, output folders and paths of a development machine, old script names.
# GPUs are named by model ("NVIDIA H100 80GB HBM3", "H200"), the course material by its documents.
# This file is left out of the search: it has to spell the patterns.
set -euo pipefail
cd "$(dirname "$0")/../.."
ignore=(':!docs/results/' ':!scripts/ci/words.sh')

# Case-insensitive, Perl syntax. "session" as a word, but not pytest's scope="session" or
# Catch::Session; "issue" followed by a number (issue 15, issues 3 and 4, issue #7).
insensitive=(
  '\blent\b'
  '(?<![":])\bsessions?\b'
  '\bdevice[- ]calls?\b'
  '\bissues? #?[0-9]'
  '\bnvidia-h[12]00'
  '\bh[12]00-x[0-9]'
  '(?<![a-z])/work/'
  '(?<![a-z.])/root/'
  '\bfarm\b'
  '\btool library\b'
  '\bshared/([A-Z]+\.md|seeds)'
  '\bsubagents?\b'
  '\b(the|a|on) (CPU|GPU) machine\b'
  '\bof the pool\b'
  '\bbuild-(device|run)\b'
  '\bscripts/device-'
)
# Case-sensitive: the shell variable of a development machine's output folder (CMake's ${OUT} is
# fine), and a title.
sensitive=(
  '\$OUT\b'
  '\bCEO\b'
)

args=()
for p in "${insensitive[@]}"; do args+=(-e "$p"); done
found=0
if git grep -I -n -i -P "${args[@]}" -- . "${ignore[@]}"; then found=1; fi
args=()
for p in "${sensitive[@]}"; do args+=(-e "$p"); done
if git grep -I -n -P "${args[@]}" -- . "${ignore[@]}"; then found=1; fi

if [ "$found" -ne 0 ]; then
  echo "words.sh: the lines above speak of how the project was developed; say it in the project's own terms" >&2
  exit 1
fi
echo "words.sh: no development words outside docs/results/"
