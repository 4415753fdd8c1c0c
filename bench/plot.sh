#!/usr/bin/env bash
# plot.sh SCRIPT.py ARGS...: runs a plotting script with the first Python that has matplotlib (the one on
# PATH, else Debian's /usr/bin/python3 with python3-matplotlib).
set -euo pipefail
for python in python3 /usr/bin/python3; do
  if command -v "$python" >/dev/null && "$python" -c 'import matplotlib' 2>/dev/null; then
    exec "$python" "$@"
  fi
done
echo "plot.sh: no Python with matplotlib (apt-get install python3-matplotlib)" >&2
exit 1
