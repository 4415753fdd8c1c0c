#!/usr/bin/env bash
# scripts/gpu_test_run.sh: the whole test suite on the GPU machine, from the bundle scripts/gpu-test-bundle.sh
# made here (.carry/). Run from the repository root there, as root (the machine's default):
#   bash scripts/gpu_test_run.sh
# Runs every GoogleTest program of .carry/tests.txt (CPU and GPU) with --gtest_output=xml, the permission
# tests as an unprivileged user (tests/support/run_unprivileged.sh), the Fashion-MNIST training test on JPEGs
# made there from the carried IDX files, and the torch-free logic of the PyTorch peers (unittest). Writes
# under $OUT/tests/: junit/NAME.xml (one JUnit file per run), logs/NAME.log, summary.json and summary.txt.
# Exits non-zero when a test fails, a program crashes or times out, a program lists fewer tests than it did
# where it was built (a test that silently vanished), or a test skips for want of a GPU on this machine.
set -uo pipefail
root=$PWD
out=${OUT:-/tmp/out}/tests
mkdir -p "$out/junit" "$out/logs"
[ -f .carry/bundle.tar.xz ] && [ -f .carry/tests.txt ] ||
  { echo "gpu_test_run: no .carry/bundle.tar.xz or .carry/tests.txt (scripts/gpu-test-bundle.sh)" >&2; exit 1; }
unpacked=$(mktemp -d)
trap 'rm -rf "$unpacked"' EXIT
tar xf .carry/bundle.tar.xz -C "$unpacked"
# shellcheck disable=SC1091
source "$unpacked/bundle/tools/device-env" "$unpacked/bundle/lib"
bin=$unpacked/bundle/bin
# The bundle is root's; the unprivileged runs need to reach the programs and libraries.
chmod 755 "$unpacked"

{
  echo "gpu_test_run: commit $(cat .carry/commit 2>/dev/null || echo unknown), $(date -u +%FT%TZ)"
  nvidia-smi -L 2>&1
  echo "$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
} | tee "$out/machine.txt"

# What the tests that run other programs need: the examples, and the Fashion-MNIST JPEGs.
export CONVEYOR_FEED_VS_PREFETCH=$bin/feed_vs_prefetch
export CONVEYOR_TRAIN_FASHION_MNIST=$bin/train_fashion_mnist
export CONVEYOR_QUICKSTART=$bin/quickstart CONVEYOR_MAKE_SHARDS=$bin/make_shards
export CONVEYOR_CUSTOM_NETWORK=$bin/custom_network CONVEYOR_RESUME_TOOL=$bin/resume_tool
# The data-parallel tests: their rank program, and the launcher and two hosts from this checkout (the GPU
# machine has no MPI: launch.sh starts its ranks as processes, bootstrapped by NCCL alone, and the tests
# that need mpirun skip).
export CONVEYOR_DATA_PARALLEL_PEER=$bin/data_parallel_peer
export CONVEYOR_LAUNCH=$root/scripts/launch.sh CONVEYOR_TWO_HOSTS=$root/tests/support/two_hosts.sh
data=$unpacked/data
export CONVEYOR_TEST_FASHION_MNIST=$data/fashion-mnist
mkdir -p "$data/idx"
for f in .carry/fashion-mnist/*.gz; do gzip -dc "$f" >"$data/idx/$(basename "${f%.gz}")"; done
timeout 300 "$bin/make_fashion_mnist" --idx "$data/idx" --out "$data/fashion-mnist" >"$out/logs/make_fashion_mnist.log" 2>&1 ||
  echo "gpu_test_run: making the Fashion-MNIST JPEGs failed (logs/make_fashion_mnist.log)"
chmod -R a+rX "$data"

# run NAME SECONDS COMMAND...: one run with its log; its exit status goes to status/NAME.
mkdir -p "$out/status"
run() {
  local name=$1 seconds=$2 start=$SECONDS rc
  shift 2
  timeout "$seconds" "$@" >"$out/logs/$name.log" 2>&1
  rc=$?
  echo "$rc $((SECONDS - start))" >"$out/status/$name"
  printf '  %-44s rc %3d  %4d s\n' "$name" "$rc" $((SECONDS - start))
}

# The unprivileged runs write their JUnit files where that user may, then they are copied to $out.
shared=$unpacked/unprivileged
mkdir -p "$shared" && chmod 1777 "$shared"
echo "test programs:"
while read -r kind name program args; do
  case "$kind" in
    gtest)
      run "$name" 900 "$bin/$name" --gtest_output="xml:$out/junit/$name.xml" ;;
    unprivileged)
      # shellcheck disable=SC2086
      run "$name" 300 "$root/tests/support/run_unprivileged.sh" "$bin/$program" $args \
        --gtest_output="xml:$shared/$name.xml"
      [ -f "$shared/$name.xml" ] && cp "$shared/$name.xml" "$out/junit/$name.xml" ;;
  esac
done <.carry/tests.txt
echo "scripted tests:"
run bench_peers_logic 120 python3 -B -m unittest discover -s "$root/tests/bench" -p 'test_*.py'

python3 - "$out" .carry/tests.txt <<'EOF'
import glob, json, os, sys
import xml.etree.ElementTree as ET

out, manifest = sys.argv[1], sys.argv[2]
expected = {}
for line in open(manifest):
    fields = line.split()
    if fields and fields[0] == "gtest":
        expected[fields[1]] = int(fields[2])
    elif fields and fields[0] == "unprivileged":
        expected[fields[1]] = None
status = {}
for path in glob.glob(os.path.join(out, "status", "*")):
    rc, seconds = open(path).read().split()
    status[os.path.basename(path)] = (int(rc), int(seconds))

runs, problems = [], []
NO_GPU = ("no GPU visible", "no CUDA device visible")
for name in sorted(set(expected) | set(status)):
    rc, seconds = status.get(name, (None, 0))
    entry = {"name": name, "exit_code": rc, "seconds": seconds, "tests": 0, "failures": [], "skipped": []}
    xml = os.path.join(out, "junit", name + ".xml")
    if rc is None:
        problems.append(f"{name}: did not run")
    elif rc == 124:
        problems.append(f"{name}: timed out")
    elif rc != 0:
        problems.append(f"{name}: exit code {rc}")
    if name in expected and not os.path.exists(xml):
        problems.append(f"{name}: no JUnit file (crashed before writing it?)")
    if os.path.exists(xml):
        for case in ET.parse(xml).getroot().iter("testcase"):
            test = f"{case.get('classname')}.{case.get('name')}"
            entry["tests"] += 1
            for failure in case.findall("failure"):
                entry["failures"].append({"test": test, "message": (failure.get("message") or "")[:2000]})
            skipped = case.find("skipped")
            if skipped is not None or case.get("result") == "skipped":
                reason = " | ".join(((skipped.get("message") if skipped is not None else "") or "").split("\n"))
                entry["skipped"].append({"test": test, "reason": reason[:500]})
                if any(words in reason for words in NO_GPU):
                    problems.append(f"{test}: skipped for want of a GPU on the GPU machine: {reason[:200]}")
        want = expected.get(name)
        if want is not None and entry["tests"] < want:
            problems.append(f"{name}: ran {entry['tests']} tests, {want} where it was built")
        for failure in entry["failures"]:
            problems.append(f"{failure['test']}: failed")
    runs.append(entry)

summary = {"commit": open(".carry/commit").read().strip() if os.path.exists(".carry/commit") else "unknown",
           "machine": open(os.path.join(out, "machine.txt")).read(), "runs": runs, "problems": problems,
           "passed": not problems}
with open(os.path.join(out, "summary.json"), "w") as f:
    json.dump(summary, f, indent=1)
lines = [f"{'run':44} {'tests':>5} {'failed':>6} {'skipped':>7} {'rc':>4} {'s':>5}"]
for r in runs:
    lines.append(f"{r['name']:44} {r['tests']:5} {len(r['failures']):6} {len(r['skipped']):7} "
                 f"{'-' if r['exit_code'] is None else r['exit_code']:>4} {r['seconds']:5}")
total = sum(r["tests"] for r in runs)
lines.append(f"{total} tests in {len(runs)} runs; "
             f"{sum(len(r['failures']) for r in runs)} failed, {sum(len(r['skipped']) for r in runs)} skipped")
lines += [f"skipped: {s['test']}: {s['reason'][:160]}" for r in runs for s in r["skipped"]]
lines += [f"PROBLEM: {p}" for p in problems]
lines.append("PASSED" if not problems else f"FAILED ({len(problems)} problems)")
text = "\n".join(lines)
open(os.path.join(out, "summary.txt"), "w").write(text + "\n")
print(text)
sys.exit(0 if not problems else 1)
EOF
