#!/usr/bin/env bash
# format.sh: applies .clang-format to every C, C++ and CUDA source the repository tracks.
# Usage: scripts/format.sh [--check]   (--check changes nothing and fails if a file would change)
set -euo pipefail
cd "$(dirname "$0")/.."
fmt=$(command -v clang-format-14 || command -v clang-format || true)
if [ -z "$fmt" ]; then
  echo "format.sh: clang-format is not installed (Debian package clang-format-14)" >&2
  exit 2
fi
mapfile -t files < <(git ls-files '*.c' '*.h' '*.cpp' '*.hpp' '*.cu' | grep -v '^tests/data/')
if [ "${1:-}" = "--check" ]; then
  exec "$fmt" --dry-run --Werror "${files[@]}"
fi
"$fmt" -i "${files[@]}"
