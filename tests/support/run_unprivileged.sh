#!/bin/sh
# run_unprivileged.sh PROGRAM [ARGS...]: runs a GoogleTest program as an unprivileged user, so that the
# tests of permission-denied paths execute (root reads every file, and those tests would only skip).
# With CONVEYOR_REQUIRE_PERMISSION_TESTS=1 set for it, a test that still finds the permissions granted
# fails instead of skipping (tests/support/permissions.h).
#   As root: drops to CONVEYOR_TEST_USER (default: nobody) with setpriv: no groups, no capabilities. When
#   that user cannot reach PROGRAM (a build tree under a private home), a copy in a fresh folder runs.
#   As anyone else: runs PROGRAM directly.
# Fails when ARGS select no test, so that a renamed test cannot silently drop out.
set -eu
[ $# -ge 1 ] || { echo "usage: run_unprivileged.sh PROGRAM [ARGS...]" >&2; exit 2; }
program=$1
shift
case "$program" in /*) ;; *) program=$PWD/$program ;; esac  # it runs from another folder
export CONVEYOR_REQUIRE_PERMISSION_TESTS=1

# Listing with the filter only: other flags (--gtest_output) would make the listing write files.
filter=""
for arg in "$@"; do
  case "$arg" in --gtest_filter=*) filter=$arg ;; esac
done
listed=$("$program" ${filter:+"$filter"} --gtest_list_tests | grep -c '^  ' || true)
if [ "$listed" -eq 0 ]; then
  echo "run_unprivileged: '$*' selects no test of $program" >&2
  exit 1
fi

if [ "$(id -u)" -ne 0 ]; then
  exec "$program" "$@"
fi

user=${CONVEYOR_TEST_USER:-nobody}
uid=$(id -u "$user") || { echo "run_unprivileged: no user '$user' (set CONVEYOR_TEST_USER)" >&2; exit 1; }
gid=$(id -g "$user")
[ "$uid" -ne 0 ] || { echo "run_unprivileged: '$user' is root" >&2; exit 1; }
as_user() { setpriv --reuid="$uid" --regid="$gid" --clear-groups --inh-caps=-all "$@"; }

copy=""
if ! as_user test -x "$program"; then
  copy=$(mktemp -d)
  chmod 755 "$copy"
  cp "$program" "$copy/"
  program=$copy/$(basename "$program")
fi
status=0
# A folder the user owns for the tests' files, and as the working directory.
work=$(mktemp -d)
chown "$uid:$gid" "$work"
# A ThreadSanitizer suppressions file the user cannot read (a private checkout) would stop the program:
# it reads a copy.
tsan_options=${TSAN_OPTIONS:-}
case " $tsan_options " in
  *" suppressions="*)
    file=$(printf '%s
' $tsan_options | sed -n 's/^suppressions=//p' | head -n 1)
    if [ -n "$file" ] && ! as_user test -r "$file"; then
      cp "$file" "$work/tsan.supp" && chmod 644 "$work/tsan.supp"
      tsan_options=$(printf '%s
' $tsan_options | sed "s|^suppressions=.*|suppressions=$work/tsan.supp|" | tr '\n' ' ')
    fi ;;
esac
(cd "$work" && TMPDIR=$work TSAN_OPTIONS=$tsan_options as_user "$program" "$@") || status=$?
rm -rf "$work" ${copy:+"$copy"}
exit $status
