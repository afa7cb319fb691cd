#!/usr/bin/env bash
# `make test` wherever the clone lives. Run as root, the integration tests create ordinary users and
# run the CLI as them (the bundle, the pinned node in node_modules, the test binaries, the fixtures):
# those users must reach the checkout. When a folder on its path shuts others out (a clone under
# /root, a 0700 HOME, `mktemp -d`), the tests run from a copy in a folder they can enter, and the
# copy is removed afterwards; the JSON report comes back to this checkout's dist/.
#   usage: bash scripts/test-where-reachable.sh TARGET   (the make target that runs the tests)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
target=${1:?usage: bash scripts/test-where-reachable.sh TARGET}

# Whether an ordinary user (nobody) can read the checkout's files.
reachable() { setpriv --reuid=65534 --regid=65534 --clear-groups test -r "$1/package.json" 2>/dev/null; }

# The first folder on the way down to the checkout that shuts others out (what the note names).
closed_folder() {
  local d="" part rest=${root#/}
  while [ -n "$rest" ]; do
    part=${rest%%/*}
    [ "$part" = "$rest" ] && rest="" || rest=${rest#*/}
    d="$d/$part"
    if ! setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$d" 2>/dev/null; then echo "$d"; return; fi
  done
  echo "$root"
}

if [ "$(id -u)" -ne 0 ] || [ -n "${RK8S_TEST_COPY_OF:-}" ] || reachable "$root"; then
  exec make -C "$root" --no-print-directory "$target"
fi

copy=$(mktemp -d /var/tmp/rootless-k8s-test.XXXXXX)
trap 'rm -rf "$copy"' EXIT
chmod 755 "$copy"
echo "note: the tests run as users they create, and $(closed_folder) (mode $(stat -c %a "$(closed_folder)")) shuts them out of $root: running them from a copy, $copy (removed afterwards)" >&2
# Everything but the history and the build output (remade there); node_modules and .cache come along warm.
tar -C "$root" --exclude=./.git --exclude=./dist -cf - . | tar -C "$copy" -xf -
rc=0
RK8S_TEST_COPY_OF=$root make -C "$copy" --no-print-directory "$target" || rc=$?
if [ -f "$copy/dist/test-results.json" ]; then mkdir -p "$root/dist" && cp "$copy/dist/test-results.json" "$root/dist/"; fi
exit "$rc"
