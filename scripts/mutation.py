"""Mutation score of the pure core: runs mutmut over a scratch copy of the tree, applies the
reviewed list of equivalent mutants and prints one row per module, then `mutation score: N%`.

mutmut (3.x) rather than cosmic-ray: mutmut forks one child per mutant from a warmed-up pytest
and runs only the tests that reach the mutated function, so the ~4000 mutants of the core take
minutes; cosmic-ray starts the whole test command once per mutant.

The run happens in build/mutation/ (a copy of the working tree) so mutmut's `mutants/` tree and
its config never touch the checkout. Score = killed / (all - equivalent); a timeout counts as
killed (the mutant hung the code a test drove); "no tests", "suspicious" and a mutant left
unchecked count as survived.

Usage: scripts/mutation.py [--modules traffic/codec.py ...] [--keep] [--children N] [--survivors]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "build" / "mutation"
EQUIVALENTS = ROOT / "tests" / "mutation_equivalents.toml"

# The pure core. Edit this list when a module is split or renamed.
CORE_MODULES = [
    "emulation/topology.py",
    "controller/routing.py",
    "controller/faults.py",
    "traffic/evs.py",
    "traffic/reliability.py",
    "traffic/nscc.py",
    "traffic/codec.py",
    "analysis/recovery.py",
    "analysis/metrics.py",
]
PACKAGES = ["emulation", "controller", "traffic", "analysis"]
TEST_SELECTION = ["tests/unit"]
GOAL_TOTAL, GOAL_MODULE = 85.0, 75.0

KILLED = {1, 3, 36, -24, 24, 152, 255, 37}     # mutmut exit codes: failed tests, timeout, type check
NOT_RUN = {None, 34, 2}                         # not checked, skipped, interrupted


def toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)                    # a JSON string is a valid TOML basic string
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    raise TypeError(f"cannot write {v!r} as TOML")


def scratch_pyproject(modules: list[str], children_timeout: float, tests: list[str]) -> str:
    """pyproject.toml for the scratch tree: the project's pytest settings plus mutmut's."""
    pytest_ini = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    mutmut = {
        "source_paths": PACKAGES,
        "only_mutate": modules,
        "pytest_add_cli_args": ["-p", "no:cacheprovider", "-q"],
        "pytest_add_cli_args_test_selection": tests,
        "timeout_multiplier": children_timeout,
        # data the tests read (scenarios, scripts): mutmut runs the tests inside mutants/
        "also_copy": sorted(p.name for p in WORK.iterdir()
                            if p.name not in {*PACKAGES, "tests", "mutants", "pyproject.toml"}),
    }
    lines = ["[tool.mutmut]"] + [f"{k} = {toml_value(v)}" for k, v in mutmut.items()]
    lines += ["", "[tool.pytest.ini_options]"]
    lines += [f"{k} = {toml_value(v)}" for k, v in pytest_ini.items()]
    return "\n".join(lines) + "\n"


def copy_tree(keep: bool) -> None:
    """Copy the working tree's files (tracked and new, not ignored) into WORK."""
    if WORK.exists():
        for child in WORK.iterdir():
            if keep and child.name == "mutants":
                continue
            shutil.rmtree(child) if child.is_dir() else child.unlink()
    WORK.mkdir(parents=True, exist_ok=True)
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT,
                           capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, files):
        src = ROOT / name
        if not src.is_file() or name == "pyproject.toml":
            continue
        dst = WORK / name
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst)


def load_equivalents() -> dict[str, str]:
    """mutant name -> reason; every entry must give a reason."""
    if not EQUIVALENTS.exists():
        return {}
    data = tomllib.loads(EQUIVALENTS.read_text())
    out = {}
    for i, entry in enumerate(data.get("equivalent", [])):
        name, reason = entry.get("mutant"), entry.get("reason", "").strip()
        if not name or not reason:
            raise SystemExit(f"{EQUIVALENTS.name}: entry {i} needs both 'mutant' and 'reason'")
        out[name] = reason
    return out


def results(modules: list[str]) -> dict[str, dict[str, int | None]]:
    """module path -> {mutant name: exit code} from mutmut's .meta files."""
    out = {}
    for mod in modules:
        meta = WORK / "mutants" / (mod + ".meta")
        if not meta.exists():
            raise SystemExit(f"mutmut left no results for {mod} (looked for {meta})")
        out[mod] = json.loads(meta.read_text())["exit_code_by_key"]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--modules", nargs="+", default=CORE_MODULES)
    ap.add_argument("--keep", action="store_true", help="reuse build/mutation/mutants (faster reruns)")
    ap.add_argument("--children", type=int, default=2, help="parallel mutant processes (shared machine: 1-2)")
    ap.add_argument("--survivors", action="store_true", help="list surviving mutants")
    ap.add_argument("--timeout-multiplier", type=float, default=15.0)
    ap.add_argument("--tests", nargs="+", default=TEST_SELECTION,
                    help="test files to run (default: all unit tests); fewer = faster, and a "
                         "lower bound on the score")
    ap.add_argument("--report-only", action="store_true",
                    help="only read the results of the last (possibly interrupted) run")
    args = ap.parse_args(argv)
    unknown = [m for m in args.modules if not (ROOT / m).is_file()]
    if unknown:
        raise SystemExit(f"no such module: {', '.join(unknown)}")
    mutmut = Path(sys.executable).parent / "mutmut"
    if not mutmut.exists():
        raise SystemExit("mutmut is not installed in this environment: run `make setup`")

    equivalents = load_equivalents()
    started = time.monotonic()
    if not args.report_only:
        run_mutmut(args)
    elapsed = time.monotonic() - started
    return report(args, equivalents, elapsed)


def run_mutmut(args) -> None:
    mutmut = Path(sys.executable).parent / "mutmut"
    copy_tree(args.keep)
    (WORK / "pyproject.toml").write_text(scratch_pyproject(args.modules, args.timeout_multiplier, args.tests))
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    log = ROOT / "build" / "mutmut.log"
    with log.open("w") as out:
        run = subprocess.run(["nice", "-n", "10", str(mutmut), "run", "--max-children", str(args.children)],
                             cwd=WORK, env=env, stdout=out, stderr=subprocess.STDOUT)
    if run.returncode != 0:
        tail = log.read_text(errors="replace")[-3000:]
        sys.stderr.write(tail.replace("\r", "\n") + "\n")
        raise SystemExit(f"mutmut run failed (exit {run.returncode}); full output in {log}")


def report(args, equivalents: dict[str, str], elapsed: float) -> int:
    by_module = results(args.modules)
    unused = set(equivalents) - {n for codes in by_module.values() for n in codes}
    total_killed = total_counted = 0
    rows, survivors, low = [], [], []
    for mod, codes in by_module.items():
        killed = counted = equiv = not_run = 0
        for name, code in codes.items():
            if name in equivalents:
                equiv += 1
            else:
                counted += 1
                not_run += code in NOT_RUN      # counted as survived: nothing showed it killed
                if code in KILLED:
                    killed += 1
                elif code not in NOT_RUN:
                    survivors.append((name, code))
        score = 100.0 * killed / counted if counted else 100.0
        if score < GOAL_MODULE:
            low.append(mod)
        checked = counted - not_run
        rows.append((mod, len(codes), killed, counted - killed, equiv, not_run, score,
                     100.0 * killed / checked if checked else float("nan")))
        total_killed += killed
        total_counted += counted
    # "of checked": the score over the mutants the run got to (differs only for a partial run)
    print(f"{'module':28} {'mutants':>7} {'killed':>7} {'survived':>8} {'equiv':>6} {'not run':>7} "
          f"{'score':>7} {'of checked':>10}")
    for mod, n, k, s, e, nr, score, of_checked in rows:
        print(f"{mod:28} {n:7d} {k:7d} {s:8d} {e:6d} {nr:7d} {score:6.1f}% {of_checked:9.1f}%")
    if args.survivors:
        for name, code in survivors:
            print(f"survived: {name} (exit {code})")
    if unused and set(args.modules) == set(CORE_MODULES):
        print(f"note: {len(unused)} listed equivalent mutants no longer exist: {sorted(unused)[:5]}")
    if low:
        print(f"below {GOAL_MODULE:.0f}%: {', '.join(low)}")
    if not args.report_only:
        print(f"time: {elapsed:.0f} s with {args.children} worker(s)")
    total = 100.0 * total_killed / total_counted if total_counted else 100.0
    print(f"mutation score: {total:.0f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
