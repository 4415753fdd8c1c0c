#!/usr/bin/env python3
"""Every program's command line behaves the same way (they all parse it with CLI11):

  --help            exit 0, the usage on stdout, nothing on stderr
  an unknown flag   exit 2, a message on stderr that names it
  a bad value       exit 2, a message on stderr that names the option, as "--flag value" and as "--flag=value"

    command_line_test.py PROGRAM OPTION BAD_VALUE [PROGRAM OPTION BAD_VALUE]...

An OPTION without leading dashes names a positional argument; its BAD_VALUE is then the whole space-
separated list of arguments to give ("-": none).
"""
import os
import subprocess
import sys

failures = []


def run(args):
    return subprocess.run(args, capture_output=True, text=True, timeout=60)


def expect(condition, message, result):
    if not condition:
        failures.append(f"{message}\n  exit {result.returncode}\n  stdout: {result.stdout.strip()[:400]}\n"
                        f"  stderr: {result.stderr.strip()[:400]}")


def check(program, option, bad_value):
    name = os.path.basename(program)
    shown = run([program, "--help"])
    expect(shown.returncode == 0, f"{name} --help: exit {shown.returncode}, expected 0", shown)
    expect("Usage:" in shown.stdout and option in shown.stdout, f"{name} --help: no usage naming {option}", shown)
    expect(shown.stderr == "", f"{name} --help: wrote to stderr", shown)

    unknown = run([program, "--no-such-flag", "1"])
    expect(unknown.returncode == 2, f"{name} --no-such-flag: exit {unknown.returncode}, expected 2", unknown)
    expect("--no-such-flag" in unknown.stderr, f"{name} --no-such-flag: the message does not name it", unknown)

    forms = ([option, bad_value], [f"{option}={bad_value}"]) if option.startswith("--") else ([] if bad_value == "-" else bad_value.split(),)
    for args in forms:
        bad = run([program] + args)
        expect(bad.returncode == 2, f"{name} {' '.join(args)}: exit {bad.returncode}, expected 2", bad)
        expect(option in bad.stderr, f"{name} {' '.join(args)}: the message does not name {option}", bad)
    print(f"{name}: checked --help, an unknown flag, {option} {bad_value}")


def main(args):
    if not args or len(args) % 3:
        sys.exit(__doc__)
    for i in range(0, len(args), 3):
        check(*args[i:i + 3])
    if failures:
        print("FAILED:\n" + "\n".join(failures))
        return 1
    print("all command lines behave alike")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
