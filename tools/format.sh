#!/usr/bin/env bash
# Checks (default) or applies (--fix) the layout of every tracked C++ and Python file.
#   tools/format.sh          # exit 1 and list the files that differ
#   tools/format.sh --fix    # rewrite them in place
# C++: clang-format 14 (Debian 12's; .clang-format). Python: black and flake8 (Debian's).
set -euo pipefail
cd "$(dirname "$0")/.."
fix=0
[ "${1:-}" = "--fix" ] && fix=1

required_major=14
version=$(clang-format --version | sed -n 's/.*version \([0-9]*\)\..*/\1/p')
if [ "$version" != "$required_major" ]; then
  echo "tools/format.sh: clang-format $required_major is required (found '${version:-none}'); run tools/setup.sh" >&2
  exit 2
fi

mapfile -t cpp < <(git ls-files '*.cpp' '*.hpp' '*.h')
mapfile -t py < <(git ls-files '*.py')
status=0
if [ $fix -eq 1 ]; then
  clang-format -i "${cpp[@]}"
  black -q "${py[@]}"
else
  bad=()
  for f in "${cpp[@]}"; do
    clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
  done
  if [ ${#bad[@]} -gt 0 ]; then
    printf 'tools/format.sh: not formatted (run tools/format.sh --fix): %s\n' "${bad[@]}" >&2
    status=1
  fi
  black --check -q "${py[@]}" || { echo "tools/format.sh: Python files need black (run tools/format.sh --fix)" >&2; status=1; }
fi
flake8 "${py[@]}" || { echo "tools/format.sh: flake8 found problems in the Python files" >&2; status=1; }
exit $status
