"""Run the integration suite several times in a row while another process keeps one core busy.

The integration tests judge timing against the controller's logs and the links' rates rather
than fixed sleeps, so they should hold when the machine is not idle. This is how that claim is
checked: a spinning process at normal priority takes one core for the whole run (on a 2-core
machine the fabric, the controller and the endpoints share the other), and the suite must pass
every time. Stops at the first failing run and says which.

Usage: scripts/integration_under_load.py [--runs 3] [pytest args...]
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPIN = "while True:\n    pass\n"


def start_busy_core() -> subprocess.Popen:
    """One process spinning at normal priority: one core's worth of competing load."""
    return subprocess.Popen([sys.executable, "-c", SPIN], start_new_session=True)


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3, help="passes in a row required (default 3)")
    ap.add_argument("pytest_args", nargs="*", help="extra pytest arguments (e.g. -x, -k ...)")
    args = ap.parse_args(argv)
    if args.runs < 1:
        raise SystemExit(f"--runs must be at least 1, not {args.runs}")
    if os.cpu_count() and os.cpu_count() < 2:
        raise SystemExit("needs at least 2 cores: one is kept busy, the suite runs on the rest")
    busy = start_busy_core()
    print(f"busy core: pid {busy.pid} spinning for the whole run", flush=True)
    results = []
    try:
        for n in range(1, args.runs + 1):
            started = time.monotonic()
            run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p",
                                  "no:cacheprovider", "tests/integration", *args.pytest_args],
                                 cwd=ROOT)
            took = time.monotonic() - started
            results.append((n, run.returncode, took))
            print(f"run {n}/{args.runs}: {'passed' if run.returncode == 0 else 'FAILED'} "
                  f"in {took:.0f} s", flush=True)
            if run.returncode != 0:
                break
            if busy.poll() is not None:
                raise SystemExit(f"the busy-core process exited (code {busy.returncode}): "
                                 f"run {n} was not under load")
    finally:
        stop(busy)
    passed = sum(1 for _, code, _ in results if code == 0)
    print(f"integration under load: {passed} of {args.runs} runs passed in a row")
    return 0 if passed == args.runs else 1


if __name__ == "__main__":
    sys.exit(main())
