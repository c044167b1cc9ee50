#!/usr/bin/env bash
# Prints the path of a Python 3.13 interpreter: python3.13 on PATH, else pyenv's; fails clearly otherwise.
set -euo pipefail
if command -v python3.13 >/dev/null 2>&1 && python3.13 -c 'import sys; sys.exit(sys.version_info[:2] != (3, 13))' 2>/dev/null; then
  command -v python3.13
  exit 0
fi
for candidate in $(ls -1d /root/.pyenv/versions/3.13*/bin/python3.13 2>/dev/null | sort -V -r); do
  if [ -x "$candidate" ]; then echo "$candidate"; exit 0; fi
done
echo "storypost needs Python 3.13: no python3.13 on PATH and none under /root/.pyenv/versions/3.13*/bin/" >&2
exit 1
