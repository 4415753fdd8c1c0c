# Shared by the data scripts (sourced): stamps that make every script idempotent, and publishing a
# finished folder in one rename so a half-made data set is never mistaken for a whole one.

say() { printf '%s\n' "$*" >&2; }

# stamp_matches DIR TEXT: DIR was made by exactly this recipe.
stamp_matches() {
  [ -f "$1/.stamp" ] && [ "$(cat "$1/.stamp")" = "$2" ]
}

# staging_dir DIR: a fresh sibling folder to build DIR in (removed on exit unless published).
staging_dir() {
  local staging="$1.partial.$$"
  rm -rf "$staging"
  mkdir -p "$staging"
  printf '%s' "$staging"
}

# publish STAGING DIR TEXT: stamps STAGING and puts it in DIR's place. Refuses to remove a DIR that
# these scripts did not make (no .stamp), so a wrong path never deletes someone's data.
publish() {
  local staging=$1 dir=$2 text=$3
  printf '%s\n' "$text" >"$staging/.stamp"
  if [ -e "$dir" ]; then
    if [ ! -f "$dir/.stamp" ]; then
      say "refusing to replace $dir: it exists and was not made by conveyor's data scripts (no .stamp)"
      return 1
    fi
    rm -rf "$dir"
  fi
  mv "$staging" "$dir"
}

# tool BUILD_DIR RELATIVE: the path of a data tool built in BUILD_DIR, or a clear error.
tool() {
  local path="$1/data/$2"
  if [ ! -x "$path" ]; then
    say "missing $path: build the project first (cmake --build $1)"
    return 1
  fi
  printf '%s' "$path"
}
