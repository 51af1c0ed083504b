"""Mutation score of the pure core: runs mutmut module by module over scratch copies of the tree,
applies the reviewed list of equivalent mutants, prints one row per module as it finishes and
ends with `mutation score: N%`.

mutmut (3.x) rather than cosmic-ray: mutmut forks one child per mutant from a warmed-up pytest
and runs only the tests that reach the mutated function; cosmic-ray starts the whole test
command once per mutant.

Each module runs in its own scratch copy, build/mutation/<module>/, with only the unit test files
that exercise it (MODULE_TESTS): mutmut's stats and clean runs then cover a few files instead of
the whole suite, and its cache stays valid per module: `--keep` keeps the killed mutants and runs
the others again (a changed test selection makes mutmut start the module afresh).
A plugin (scripts/mutation_test_order.py) runs each mutant's fastest tests first, so a killed
mutant rarely waits for a long simulation. Score = killed / (all - equivalent); a timeout counts
as killed (the mutant hung the code a test drove); "no tests", "suspicious" and a mutant left
unchecked count as survived.

A whole run takes hours on a loaded 2-core machine. `--sample N` scores a fixed random sample
of N mutants per module (verdicts already known are reused) and estimates the whole-core score
as the size-weighted mean of the modules' killed fractions, with a 95% interval. Tests written
against a sample's survivors make that sample's score optimistic: `--sample M --census N` then
counts the N-sample in full (every verdict known) and estimates the other mutants from a fresh
M-sample drawn outside it. `--keep` after adding test files to a module's selection reruns only
its survivors (see keep_verdicts_of_a_grown_selection).

For everyday use, `--changed [REF]` (REF: a git ref, default main) mutates only the functions
and methods of core modules that differ from REF (committed or not), each module against its
own test selection: minutes instead of hours. The score then covers those functions' mutants
only (see changed_functions for what counts as changed).

Usage: scripts/mutation.py [--modules traffic/core/codec.py ...] [--keep] [--sample M [--census N]]
                           [--changed [REF]] [--children N] [--survivors] [--report-only]
"""
from __future__ import annotations

import argparse
import ast
import hashlib
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "build" / "mutation"
EQUIVALENTS = ROOT / "tests" / "mutation_equivalents.toml"
TIMES = WORK / "times.json"          # module -> wall seconds of its last run
SELECTION_FILE = "test-selection.json"   # in mutants/: the selection of the module's last run

def _tests(*names: str) -> list[str]:
    return [f"tests/{n}.py" for n in names]


# The pure core (no Mininet, os-ken or sockets), each with the unit test files that exercise it,
# picked from a run of the unit suite under coverage with per-test contexts (where a module has
# direct tests, end-to-end files that merely pass through it are left out). Left out on purpose:
# test_reverse_paths_fidelity, test_sender_suspend_siblings and test_ecmp_buckets_balanced,
# simulations of 10-25 s each that would dominate the run; the score is then a lower bound. Edit
# this table when a module is split or renamed, or a test file is added. Paths under tests/.
MODULE_TESTS: dict[str, list[str]] = {
    "model/topology.py": _tests("model/test_topology_limits", "model/test_topology",
                                "controller/test_routing", "traffic/core/test_denylist_rules",
                                "traffic/core/test_evs_pinning", "traffic/core/test_evs",
                                "traffic/core/test_codec_decode_errors",
                                "traffic/test_layers_known_bytes",
                                "controller/test_routing_hop_probes",
                                "controller/test_localize_hops_and_ev_events",
                                "traffic/core/test_codec_construction"),
    "controller/routing.py": _tests("controller/test_routing_cookies", "controller/test_routing",
                                    "controller/test_routing_state", "controller/test_faults",
                                    "controller/test_api"),
    "controller/routing_state.py": _tests("controller/test_routing_state",
                                          "controller/test_routing_state_edges",
                                          "controller/test_api"),
    "controller/planner.py": _tests("controller/test_planner", "controller/test_planner_batch",
                                    "controller/test_api", "controller/test_api_input"),
    "controller/faults.py": _tests("controller/test_faults", "controller/test_faults_edges",
                                   "controller/test_faults_commands", "controller/test_planner",
                                   "controller/test_planner_batch", "controller/test_api_input",
                                   "emulation/config/test_scenario_validation",
                                   "emulation/config/test_scenario_validation_input"),
    "traffic/core/evs.py": _tests("traffic/core/test_evs_defaults", "traffic/core/test_evs",
                             "traffic/core/test_evs_bookkeeping", "traffic/core/test_evs_denied",
                             "traffic/core/test_evs_pinning",
                             "traffic/core/test_reliability_loss_verdict",
                             "traffic/core/test_reliability",
                             "traffic/core/test_loss_policy_simnet",
                             "traffic/core/test_reliability_blackhole_under_congestion",
                             "traffic/core/test_sender_ecn_pinned",
                             "traffic/core/test_reliability_nack_and_ports",
                             "traffic/nic/test_endpoint_denylist", "controller/test_denylist",
                             "traffic/core/test_evs_combined_states"),
    "traffic/core/qp_config.py": _tests("traffic/core/test_qp_config_limits",
                                   "traffic/nic/test_endpoint_support_qp_keys",
                                   "emulation/config/test_scenario_validation",
                                   "emulation/config/test_scenario_validation_input",
                                   "emulation/config/test_scenario_schema_keys_reach_code",
                                   "traffic/core/test_sender_retries", "traffic/core/test_rtt",
                                   "traffic/core/test_loss_policy_ocp",
                                   "traffic/core/test_loss_policy_tolerant"),
    "traffic/core/sender.py": _tests("traffic/core/test_suspect_paths",
                                "traffic/core/test_sender_nack_edges",
                                "traffic/core/test_reliability",
                                "traffic/core/test_reliability_loss_verdict",
                                "traffic/core/test_reliability_ack_coalescing",
                                "traffic/core/test_reliability_nack_and_ports",
                                "traffic/core/test_reliability_blackhole_under_congestion",
                                "traffic/core/test_reliability_congestion_robustness",
                                "traffic/core/test_sender_ecn_pinned",
                                "traffic/core/test_loss_policy_simnet",
                                "traffic/core/test_sender_retries",
                                "traffic/workload/test_mrc_comm",
                                "traffic/nic/test_endpoint_denylist",
                                "traffic/core/test_sender_loss_records",
                                "traffic/core/test_evs_combined_states",
                                "traffic/core/test_reliability_parts_together"),
    "traffic/core/receiver.py": _tests("traffic/core/test_receiver_and_assembly_edges",
                                  "traffic/core/test_receiver_counters_and_sacks",
                                  "traffic/core/test_reliability",
                                  "traffic/core/test_reliability_ack_coalescing",
                                  "traffic/core/test_reliability_loss_verdict",
                                  "traffic/core/test_reliability_nack_and_ports",
                                  "traffic/core/test_sender_ecn_pinned",
                                  "traffic/core/test_sender_retries",
                                  "traffic/workload/test_mrc_comm", "traffic/nic/test_control",
                                  "traffic/core/test_sender_loss_records",
                                  "traffic/core/test_reverse_paths_check_all"),
    "traffic/core/loss_policy.py": _tests("traffic/core/test_loss_policy_ocp",
                                     "traffic/core/test_loss_policy_windows",
                                     "traffic/core/test_loss_policy_tolerant",
                                     "traffic/core/test_loss_policy_simnet",
                                     "traffic/core/test_reliability_loss_verdict",
                                     "traffic/core/test_reliability",
                                     "traffic/core/test_reliability_blackhole_under_congestion",
                                     "traffic/core/test_reliability_congestion_robustness",
                                     "traffic/core/test_sender_loss_records"),
    "traffic/core/rtt.py": _tests("traffic/core/test_rtt", "traffic/core/test_rtt_edges",
                             "traffic/core/test_reliability", "traffic/core/test_sender_retries",
                             "traffic/core/test_loss_policy_ocp",
                             "traffic/core/test_loss_policy_tolerant"),
    "traffic/core/work_requests.py": _tests("traffic/core/test_receiver_and_assembly_edges",
                                       "traffic/core/test_work_requests_flush_and_assembly",
                                       "traffic/core/test_reliability", "traffic/core/test_roce_rc",
                                       "traffic/core/test_sender_retries",
                                       "traffic/workload/test_mrc_comm", "traffic/nic/test_control",
                                       "traffic/core/test_reliability_nack_and_ports"),
    "traffic/core/reverse_paths.py": _tests("traffic/core/test_reverse_paths_clock",
                                       "traffic/core/test_reverse_paths_denied",
                                       "traffic/core/test_reliability",
                                       "traffic/core/test_reliability_loss_verdict",
                                       "traffic/core/test_loss_policy_simnet",
                                       "traffic/nic/test_endpoint_denylist",
                                       "traffic/core/test_reliability_congestion_robustness",
                                       "traffic/workload/test_mrc_comm",
                                       "traffic/core/test_reverse_paths_check_all",
                                       "traffic/core/test_reliability_parts_together"),
    "traffic/core/denylist.py": _tests("traffic/core/test_denylist_rules",
                                  "traffic/core/test_denylist_edges", "controller/test_denylist",
                                  "traffic/nic/test_endpoint_denylist"),
    "traffic/core/nscc.py": _tests("traffic/core/test_nscc_counts", "traffic/core/test_nscc",
                              "traffic/core/test_nscc_edges", "traffic/core/test_reliability",
                              "traffic/core/test_reliability_congestion_robustness",
                              "traffic/core/test_sender_ecn_pinned", "traffic/core/test_roce_rc",
                              "traffic/core/test_nscc_trimming_target"),
    "traffic/core/codec.py": _tests("traffic/core/test_codec_construction",
                               "traffic/core/test_codec_decode_errors",
                               "traffic/core/test_codec_props",
                               "traffic/core/test_codec_probe_wire",
                               "traffic/test_layers_known_bytes", "traffic/nic/test_endpoint_rx",
                               "emulation/run/test_runner_capture_snaplen", "analysis/test_pcap"),
    "analysis/recovery.py": _tests("analysis/test_recovery_series_by_hand",
                                   "analysis/test_recovery_time",
                                   "analysis/test_recovery_capacity_model",
                                   "analysis/test_runmodel",
                                   "emulation/run/test_run_summary_verdicts",
                                   "analysis/test_metrics", "analysis/test_runmodel_two_faults"),
    "analysis/metrics.py": _tests("analysis/test_metrics_by_hand", "analysis/test_metrics",
                                  "analysis/test_metrics_bad_input", "analysis/test_report_verdict",
                                  "analysis/test_metrics_busbw",
                                  "emulation/run/test_run_summary_fields"),
}
# Slow parametrised cases inside selected files: deselected (see above).
DESELECT = ["tests/controller/test_routing.py::test_ecmp_buckets_balanced"]
CORE_MODULES = list(MODULE_TESTS)
PACKAGES = ["model", "emulation", "controller", "traffic", "analysis"]
GOAL_TOTAL, GOAL_MODULE = 85.0, 75.0

# mutmut exit codes: failed tests, timeout, type check
KILLED = {1, 3, 36, -24, 24, 152, 255, 37}
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


def module_dir(module: str) -> Path:
    """Scratch copy for one module: build/mutation/traffic.core.evs/."""
    return WORK / module.removesuffix(".py").replace("/", ".")


def scratch_pyproject(work: Path, module: str, children_timeout: float, tests: list[str]) -> str:
    """pyproject.toml for a scratch tree: the project's pytest settings plus mutmut's."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    pytest_ini = project["tool"]["pytest"]["ini_options"]
    mutmut = {
        "source_paths": PACKAGES,
        "only_mutate": [module],
        "pytest_add_cli_args": ["-p", "no:cacheprovider", "-q", "-p", "mutation_test_order"],
        "pytest_add_cli_args_test_selection": test_selection(tests),
        "timeout_multiplier": children_timeout,
        # data the tests read (scenarios, scripts): mutmut runs the tests inside mutants/
        "also_copy": sorted(p.name for p in work.iterdir()
                            if p.name not in {*PACKAGES, "tests", "mutants", "pyproject.toml"}),
    }
    lines = ["[tool.mutmut]"] + [f"{k} = {toml_value(v)}" for k, v in mutmut.items()]
    lines += ["", "[tool.pytest.ini_options]"]
    lines += [f"{k} = {toml_value(v)}" for k, v in pytest_ini.items()]
    return "\n".join(lines) + "\n"


def copy_tree(work: Path, keep: bool) -> None:
    """Copy the working tree's files (tracked and new, not ignored) into `work`."""
    if work.exists():
        for child in work.iterdir():
            if keep and child.name == "mutants":
                continue
            shutil.rmtree(child) if child.is_dir() else child.unlink()
    work.mkdir(parents=True, exist_ok=True)
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT,
                           capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, files):
        src = ROOT / name
        if not src.is_file() or name == "pyproject.toml":
            continue
        dst = work / name
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst)


def load_equivalents() -> dict[str, str]:
    """mutant name -> reason; every entry must give a reason."""
    if not EQUIVALENTS.exists():
        return {}
    try:
        data = tomllib.loads(EQUIVALENTS.read_text())
    except tomllib.TOMLDecodeError as e:
        raise SystemExit(f"{EQUIVALENTS.name}: not valid TOML: {e}")
    out = {}
    for i, entry in enumerate(data.get("equivalent", [])):
        name, reason = entry.get("mutant"), entry.get("reason", "").strip()
        if not name or not reason:
            raise SystemExit(f"{EQUIVALENTS.name}: entry {i} needs both 'mutant' and 'reason'")
        out[name] = reason
    return out


def module_results(module: str) -> dict[str, int | None] | None:
    """{mutant name: exit code} from mutmut's .meta file, or None if the module never ran."""
    meta = module_dir(module) / "mutants" / (module + ".meta")
    if not meta.exists():
        return None
    return json.loads(meta.read_text())["exit_code_by_key"]


def load_times() -> dict[str, float]:
    return json.loads(TIMES.read_text()) if TIMES.exists() else {}


def save_time(module: str, seconds: float) -> None:
    times = load_times()
    times[module] = round(seconds, 1)
    TIMES.parent.mkdir(parents=True, exist_ok=True)
    TIMES.write_text(json.dumps(times, indent=1, sort_keys=True) + "\n")


class MutmutFailed(RuntimeError):
    """mutmut could not score a module (its clean test run failed, ...): the others go on."""


def recheck_survivors(module: str) -> None:
    """Mark every mutant not yet killed as unchecked, so a `--keep` run tests it again (mutmut
    itself keeps a survivor's verdict until its function changes, even after new tests)."""
    meta = module_dir(module) / "mutants" / (module + ".meta")
    if not meta.exists():
        return
    data = json.loads(meta.read_text())
    codes = data["exit_code_by_key"]
    data["exit_code_by_key"] = {n: c if c in KILLED else None for n, c in codes.items()}
    meta.write_text(json.dumps(data, indent=4))


def test_selection(tests: list[str]) -> list[str]:
    """pytest arguments that pick a module's tests (mutmut's pytest_add_cli_args_test_selection)."""
    return tests + [arg for d in DESELECT for arg in ("--deselect", d)]


def selection_fingerprint(selection: list[str]) -> str:
    """mutmut 3.8's fingerprint of its test selection (Config.config_fingerprint)."""
    return hashlib.sha256(repr(tuple(selection)).encode()).hexdigest()[:12]


def keep_verdicts_of_a_grown_selection(module: str, selection: list[str]) -> None:
    """When the test selection only gained tests since the last run, tell mutmut it is unchanged.

    mutmut resets every verdict when its test selection changes, so one new test file would
    rerun the whole module. A killed mutant stays killed when tests are only added (the test
    that failed on it is still selected), and mutmut already collects coverage of tests it has
    not seen: only the survivors then run again, against the new tests too."""
    stats_file = module_dir(module) / "mutants" / "mutmut-stats.json"
    recorded = module_dir(module) / "mutants" / SELECTION_FILE
    if not stats_file.exists() or not recorded.exists():
        return
    old = json.loads(recorded.read_text())
    stats = json.loads(stats_file.read_text())
    fingerprint = stats.get("config_fingerprint", {})
    if fingerprint.get("test_selection") != selection_fingerprint(old):
        return                      # not the selection we recorded: let mutmut decide
    old_tests, new_tests = set(old), set(selection)
    if old == selection or not old_tests <= new_tests or [a for a in old if a.startswith("--")] \
            != [a for a in selection if a.startswith("--")]:
        return                      # same, or something removed or deselected: mutmut decides
    fingerprint["test_selection"] = selection_fingerprint(selection)
    stats_file.write_text(json.dumps(stats, indent=4))


def run_mutmut(module: str, tests: list[str], args, only=None) -> None:
    """One module's mutmut run in its own scratch copy; mutmut's output goes to a log file.
    `only(codes)`: the mutant names to run, given every mutant's exit code so far (a sample,
    the changed functions); None runs them all."""
    work = module_dir(module)
    if only is None and args.sample:
        def only(codes):
            return sample_names(module, codes, args.sample, args.census)
    copy_tree(work, args.keep or only is not None)
    selection = test_selection(tests)
    if args.keep:
        recheck_survivors(module)
        keep_verdicts_of_a_grown_selection(module, selection)
    config = scratch_pyproject(work, module, args.timeout_multiplier, tests)
    (work / "pyproject.toml").write_text(config)
    # the test-order plugin is imported by name by the pytest that mutmut runs in-process
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT / "scripts"),
                                                        os.environ.get("PYTHONPATH")])))
    mutmut = Path(sys.executable).parent / "mutmut"
    log = work / "mutmut.log"
    command = ["nice", "-n", str(args.nice), str(mutmut), "run", "--max-children",
               str(args.children)]
    names: list[str] = []
    if only is not None:
        if module_results(module) is None:
            # mutmut lists a module's mutants only once it has made them: a run whose filter
            # names no mutant makes them (and the tests' coverage) and stops there
            with (work / "mutmut-generate.log").open("w") as out:
                subprocess.run(command + ["no-such-mutant"], cwd=work, env=env, stdout=out,
                               stderr=subprocess.STDOUT)
        codes = module_results(module)
        if codes is None:
            raise MutmutFailed(f"mutmut made no mutants for {module}; see "
                               f"{work / 'mutmut-generate.log'}")
        names = [n for n in only(codes) if codes[n] is None]
        if not names:
            return                  # every chosen mutant already has its verdict
    with log.open("w") as out:
        run = subprocess.run(command + names, cwd=work, env=env, stdout=out,
                             stderr=subprocess.STDOUT)
    if (work / "mutants").is_dir():
        (work / "mutants" / SELECTION_FILE).write_text(json.dumps(selection) + "\n")
    if run.returncode != 0:
        tail = log.read_text(errors="replace")[-3000:]
        sys.stderr.write(tail.replace("\r", "\n") + "\n")
        raise MutmutFailed(f"mutmut run failed for {module} (exit {run.returncode}); "
                           f"full output in {log}")


def sample_names(module: str, codes: dict, size: int, after: int | None = None) -> list[str]:
    """A random sample of `size` of the module's mutants, the same one for the same mutants
    and size (the seed is the module's name), so a rerun completes the sample it started.
    after=K: drawn only from the mutants outside the K-sample (see --census)."""
    names = sorted(codes)
    seed = f"{module}:{size}"
    if after:
        census = set(sample_names(module, codes, after))
        names = [n for n in names if n not in census]
        seed += f":after:{after}"
    return sorted(random.Random(seed).sample(names, min(size, len(names))))


def scored_codes(module: str, codes: dict, sample: int | None) -> tuple[dict, bool]:
    """(the exit codes the score counts, whether they are a sample): all of the module's once
    every mutant has a verdict, else the random sample if one was asked for."""
    if sample and any(c is None for c in codes.values()):
        return {n: codes[n] for n in sample_names(module, codes, sample)}, True
    return codes, False


def resolve_ref(ref: str) -> str:
    """`ref` if git knows it, else origin/`ref` (a fresh clone has only the remote's main)."""
    for name in (ref, f"origin/{ref}"):
        if subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{name}^{{commit}}"],
                          cwd=ROOT, capture_output=True).returncode == 0:
            return name
    raise SystemExit(f"--changed: git knows no ref {ref!r} (nor origin/{ref}); name one, "
                     f"e.g. --changed HEAD~3")


def renamed_from(ref: str, path: str) -> str | None:
    """Where `path` was at `ref` when git's rename detection says it moved since, else None."""
    status = subprocess.run(["git", "diff", "-M", "--name-status", "--no-color", ref], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout
    for line in status.splitlines():
        parts = line.split("\t")
        if len(parts) == 3 and parts[0].startswith("R") and parts[2] == path:
            return parts[1]
    return None


def changed_lines(ref: str, path: str) -> list[tuple[int, int]]:
    """Line ranges [first, last] of the working tree's `path` that differ from `ref` (git diff
    -U0 hunks; a pure deletion marks the lines on either side of it). A module moved since
    `ref` is compared with where it was (a move changes no function)."""
    paths = [p for p in (renamed_from(ref, path), path) if p]
    diff = subprocess.run(["git", "diff", "-M", "-U0", "--no-color", ref, "--", *paths],
                          cwd=ROOT, capture_output=True, text=True, check=True).stdout
    out = []
    for m in re.finditer(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@", diff, re.M):
        start, count = int(m.group(1)), int(m.group(2) or 1)
        out.append((start, start + count - 1) if count else (start, start + 1))
    return out


SEP = "\u01c1"       # mutmut 3's separator in a method's key: x<SEP>Class<SEP>method


def changed_functions(source: str, ranges: list[tuple[int, int]]) -> list[str]:
    """mutmut's keys ("x_func", "x<SEP>Class<SEP>method") of the module-level functions and
    methods whose lines (decorators included) meet `ranges`. mutmut mutates nothing else
    (nested functions belong to the function around them), so a change outside every function,
    such as a constant, leaves no mutant to run."""
    keys = []

    def meets(node) -> bool:
        first = min([node.lineno] + [d.lineno for d in node.decorator_list])
        return any(a <= node.end_lineno and b >= first for a, b in ranges)

    funcs = (ast.FunctionDef, ast.AsyncFunctionDef)
    for node in ast.parse(source).body:
        if isinstance(node, funcs) and meets(node):
            keys.append(f"x_{node.name}")
        elif isinstance(node, ast.ClassDef):
            keys += [f"x{SEP}{node.name}{SEP}{item.name}" for item in node.body
                     if isinstance(item, funcs) and meets(item)]
    return keys


def function_label(key: str) -> str:
    """"Class.method" or "func" of a mutmut key."""
    return key.removeprefix("x_") if key.startswith("x_") else key[2:].replace(SEP, ".")


def changed_modules(ref: str, modules: list[str]) -> dict[str, list[str]]:
    """{core module: mutmut keys of its changed functions} for the modules that differ from
    `ref` in at least one function."""
    ref = resolve_ref(ref)
    out = {}
    for module in modules:
        keys = changed_functions((ROOT / module).read_text(), changed_lines(ref, module))
        if keys:
            out[module] = keys
    return out


def names_of_functions(module: str, codes: dict, keys: list[str]) -> list[str]:
    """The mutants (names as mutmut lists them) of the given functions of `module`."""
    prefixes = tuple(f"{module.removesuffix('.py').replace('/', '.')}.{k}__mutmut_" for k in keys)
    return sorted(n for n in codes if n.startswith(prefixes))


HEADER = (f"{'module':28} {'mutants':>7} {'killed':>7} {'survived':>8} {'equiv':>6} {'not run':>7} "
          f"{'score':>7} {'time':>7}")


def tally(codes: dict[str, int | None], equivalents: dict[str, str]):
    """(killed, counted, equivalent, not run, survivor names) for one module's exit codes."""
    killed = counted = equiv = not_run = 0
    survivors = []
    for name, code in codes.items():
        if name in equivalents:
            equiv += 1
            continue
        counted += 1
        if code in KILLED:
            killed += 1
        else:
            # not run counts as survived: nothing showed it killed
            not_run += code in NOT_RUN
            survivors.append((name, code))
    return killed, counted, equiv, not_run, survivors


def row(module: str, codes, equivalents, seconds: float | None,
        of: int | None = None) -> tuple[str, int, int, list]:
    """One module's line; `of` = the module's number of mutants when `codes` is a sample."""
    killed, counted, equiv, not_run, survivors = tally(codes, equivalents)
    score = 100.0 * killed / counted if counted else 100.0
    took = f"{seconds:6.0f}s" if seconds is not None else f"{'-':>7}"
    line = (f"{module:28} {len(codes):7d} {killed:7d} {counted - killed:8d} {equiv:6d} "
            f"{not_run:7d} {score:6.1f}% {took}")
    if of is not None:
        line += f"  (a sample of {len(codes)} of {of} mutants)"
    return line, killed, counted, survivors


def stratified_estimate(strata: list[tuple[int, int, int]]) -> tuple[float, float]:
    """(score %, half-width % of a 95% interval) over modules given as (mutants in the module,
    sampled and counted, killed of those): each module's killed fraction weighted by its size,
    the variance with the finite-population correction (a module scored in full adds none).
    The variance uses Agresti and Coull's (killed + 2) / (sampled + 4), so a sample that killed
    every mutant still gets an interval."""
    total = sum(n for n, _, _ in strata)
    score = variance = 0.0
    for n, sampled, killed in strata:
        if not sampled:
            continue
        w = n / total
        score += w * killed / sampled
        if sampled < n:
            p = (killed + 2) / (sampled + 4)
            variance += w * w * p * (1 - p) / (sampled + 4) * (n - sampled) / max(n - 1, 1)
    return 100.0 * score, 100.0 * 1.96 * math.sqrt(variance)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--modules", nargs="+", default=CORE_MODULES, metavar="MODULE",
                    help="core modules to mutate, in this order (default: all of them)")
    ap.add_argument("--keep", action="store_true",
                    help="reuse each module's mutants/: killed mutants stay killed, the rest "
                         "are run again")
    ap.add_argument("--children", type=int, default=2,
                    help="parallel mutant processes (shared machine: 1-2)")
    ap.add_argument("--nice", type=int, default=10, help="niceness of the mutmut processes")
    ap.add_argument("--survivors", action="store_true", help="list surviving mutants")
    ap.add_argument("--timeout-multiplier", type=float, default=15.0)
    ap.add_argument("--tests", nargs="+", metavar="TEST_FILE",
                    help="test files to run for every module given (default: each module's own "
                         "selection in MODULE_TESTS); fewer = faster, and a lower bound on "
                         "the score")
    ap.add_argument("--sample", type=int, metavar="N",
                    help="score a random sample of N mutants per module (fixed seed; verdicts "
                         "already known are reused) and estimate the score with a 95%% "
                         "interval; a module whose every mutant has a verdict counts in full")
    ap.add_argument("--census", type=int, metavar="K",
                    help="with --sample N: the K-sample of an earlier run (the one new tests "
                         "were written against) counts in full, and the N mutants are drawn "
                         "from the rest, so the estimate is not biased by those tests")
    ap.add_argument("--changed", nargs="?", const="main", metavar="REF",
                    help="mutate only the functions of core modules that differ from the git "
                         "ref REF (default: main), working-tree changes included; the score "
                         "covers their mutants only")
    ap.add_argument("--report-only", action="store_true",
                    help="only read the results of the last (possibly interrupted) runs")
    args = ap.parse_args(argv)
    unknown = [m for m in args.modules if m not in MODULE_TESTS]
    if unknown:
        raise SystemExit(f"not a core module: {', '.join(unknown)} "
                         f"(known: {', '.join(CORE_MODULES)})")
    missing = sorted({t for m in args.modules for t in (args.tests or MODULE_TESTS[m])
                      if not (ROOT / t).is_file()})
    if missing:
        raise SystemExit(f"no such test file: {', '.join(missing)}")
    if args.sample is not None and args.sample < 1:
        raise SystemExit(f"--sample must be at least 1, not {args.sample}")
    if args.children < 1:
        raise SystemExit(f"--children must be at least 1, not {args.children}")
    if args.changed is not None and (args.sample or args.census):
        raise SystemExit("--changed scores the changed functions in full: leave out --sample "
                         "and --census")
    changed: dict[str, list[str]] = {}
    if args.changed is not None:
        changed = changed_modules(args.changed, args.modules)
        if not changed:
            print(f"no function of a core module differs from {args.changed}: nothing to mutate")
            return 0
        args.modules = list(changed)
        for module, keys in changed.items():
            print(f"{module}: {len(keys)} changed function(s): "
                  f"{', '.join(function_label(k) for k in keys)}", flush=True)
    if not args.report_only and not (Path(sys.executable).parent / "mutmut").exists():
        raise SystemExit("mutmut is not installed in this environment: run `make setup`")

    equivalents = load_equivalents()
    total_killed = total_counted = 0
    all_survivors, low, never_ran, failed = [], [], [], []
    strata: list[tuple[int, int, int]] = []     # (mutants, counted in the score, killed)
    any_sampled = False
    print(HEADER, flush=True)
    for module in args.modules:
        if not args.report_only:
            started = time.monotonic()
            only = None
            if module in changed:
                def only(codes, module=module):
                    return names_of_functions(module, codes, changed[module])
            try:
                run_mutmut(module, args.tests or MODULE_TESTS[module], args, only)
            except MutmutFailed as e:
                print(e, flush=True)
                failed.append(module)
                continue
            save_time(module, time.monotonic() - started)
        codes = module_results(module)
        if codes is None:
            never_ran.append(module)
            continue
        if args.census and args.sample:
            # two strata: the census sample, every verdict known, and a fresh sample of the rest
            census = sample_names(module, codes, args.census)
            fresh = sample_names(module, codes, args.sample, args.census)
            rest = [n for n in codes if n not in set(census)]
            c_killed, c_counted, *_ = tally({n: codes[n] for n in census}, equivalents)
            line, killed, counted, survivors = row(
                module, {n: codes[n] for n in fresh}, equivalents, load_times().get(module))
            module_strata = [(c_counted, c_counted, c_killed),
                             (sum(n not in equivalents for n in rest), counted, killed)]
            estimate, half = stratified_estimate(module_strata)
            line += (f"  (a fresh sample of {len(fresh)} of the {len(rest)} outside the "
                     f"{len(census)} scored in full, {c_killed}/{c_counted} killed there; "
                     f"module {estimate:.1f}% +-{half:.1f})")
            print(line, flush=True)
            strata += module_strata
            total_killed += killed + c_killed
            total_counted += counted + c_counted
            any_sampled = True
            if estimate < GOAL_MODULE:
                low.append(module)
            all_survivors += survivors
            continue
        if module in changed:
            scored = {n: codes[n] for n in names_of_functions(module, codes, changed[module])}
            line, killed, counted, survivors = row(module, scored, equivalents,
                                                   load_times().get(module))
            print(line + f"  (the mutants of {len(changed[module])} changed function(s))",
                  flush=True)
            total_killed += killed
            total_counted += counted
            all_survivors += survivors
            if counted and 100.0 * killed / counted < GOAL_MODULE:
                low.append(module)
            continue
        scored, sampled = scored_codes(module, codes, args.sample)
        line, killed, counted, survivors = row(module, scored, equivalents,
                                               load_times().get(module),
                                               len(codes) if sampled else None)
        print(line, flush=True)
        total_killed += killed
        total_counted += counted
        countable = sum(n not in equivalents for n in codes)
        strata.append((countable, counted, killed))
        any_sampled |= sampled
        all_survivors += survivors
        if counted and 100.0 * killed / counted < GOAL_MODULE:
            low.append(module)

    if args.survivors:
        for name, code in all_survivors:
            print(f"survived: {name} (exit {code})")
    ran = [m for m in args.modules if m not in never_ran]
    seen = {n for m in ran for n in module_results(m)}
    stale = sorted(n for n in equivalents if n not in seen and any(
        n.startswith(m.removesuffix(".py").replace("/", ".") + ".") for m in ran))
    if stale:
        print(f"note: {len(stale)} listed equivalent mutants no longer exist: {stale[:5]}")
    if never_ran:
        print(f"never run (no results, not in the score): {', '.join(never_ran)}")
    if low:
        print(f"below {GOAL_MODULE:.0f}%: {', '.join(low)}")
    times = load_times()
    if all(m in times for m in args.modules):
        print(f"time: {sum(times[m] for m in args.modules):.0f} s in all "
              f"(the sum of each module's last run)")
    if failed:
        print(f"mutmut failed (not in the score): {', '.join(failed)}")
    if not total_counted:
        raise SystemExit("no mutation results to score: run without --report-only first")
    if any_sampled:
        score, half = stratified_estimate(strata)
        print(f"estimated from random samples of {args.sample} mutants per module"
              f"{f' outside the {args.census}-mutant census' if args.census else ''} "
              f"({total_counted} of {sum(n for n, _, _ in strata)} mutants scored), "
              f"95% interval {max(0.0, score - half):.1f}-{min(100.0, score + half):.1f}%")
        print(f"mutation score: {score:.0f}% (estimated)")
    elif changed:
        print(f"mutation score: {100.0 * total_killed / total_counted:.0f}% (the changed "
              f"functions against {args.changed} only)")
    else:
        print(f"mutation score: {100.0 * total_killed / total_counted:.0f}%")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
