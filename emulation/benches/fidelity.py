"""`mrclab bench fidelity`: does the machine's load change the result? The demo's short version
over MRC twice, at the same time scale: once as the machine is, once with busy processes that
the bench starts and stops by PID. Prints MRC's median iteration of each (emulated time, as
summary.json gives it), their ratio and both fidelity verdicts (analysis/fidelity.py).

A faithful emulator gives a ratio near 1 with both verdicts "ok"; a CPU-bound one gives a ratio
well above 1, and its fidelity monitor should say the loaded run is not "ok". "idle" is the
machine as it is when the bench runs, which on a shared machine includes others' work.
"""
from __future__ import annotations

import re
import statistics
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from emulation.config.scenario_schema import FABRIC
from model.argtypes import UsageError, add_deprecated, add_renamed, nonneg_int

REPO = Path(__file__).resolve().parents[2]
DEFAULT_SCENARIO = REPO / "experiments" / "demo.toml"
# A process that keeps one core busy and does nothing else (no memory, no I/O).
BUSY_ARGV = [sys.executable, "-c", "while True: pass"]


def add_fidelity_arguments(parser) -> None:
    parser.add_argument("--scenario", default=str(DEFAULT_SCENARIO),
                        help="scenario whose [short] version runs (default experiments/demo.toml)")
    parser.add_argument("--busy", type=nonneg_int, default=2,
                        help="busy processes during the loaded run (default 2: one per core of "
                             "the 2-core VM this project targets)")
    parser.add_argument("--out-dir", default=None, metavar="DIR",
                        help="parent directory of both runs' directories (default: a new "
                             "temporary directory, kept)")
    add_deprecated(parser, "--results-dir", "--out-dir")
    add_renamed(parser, "--out", "--out-dir")


def fidelity_main(args) -> dict:
    return fidelity_bench(Path(args.scenario), busy=args.busy,
                          out=Path(args.out_dir) if args.out_dir else None)


def scenario_time_scale(text: str):
    """[fabric] time_scale of a scenario's text (the key's default when it has none)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"the scenario is not valid TOML: {exc}") from None
    return (data.get("fabric") or {}).get("time_scale", FABRIC["time_scale"].default)


def unpin_short(text: str) -> str:
    """The scenario's text without its [short] fabric_time_scale (the number the test suite
    runs the short version at), so the bench's short runs take [fabric] time_scale: the
    calibrated k when it is "auto"."""
    return re.sub(r"(?m)^\s*fabric_time_scale\s*=.*\n?", "", text)


def pin_time_scale(text: str, scale) -> str:
    """The scenario's text with [fabric] time_scale = "auto" (written, or the default) replaced
    by the number the first run used, so both runs share one time scale."""
    pinned, found = re.subn(r'(?m)^(\s*time_scale\s*=\s*)"auto"',
                            lambda m: f"{m.group(1)}{scale}", text, count=1)
    if found:
        return pinned
    pinned, found = re.subn(r"(?m)^\[fabric\][^\n]*\n", lambda m: f"{m.group(0)}time_scale = "
                            f"{scale}\n", text, count=1)
    return pinned if found else f"{text}\n[fabric]\ntime_scale = {scale}\n"


def start_busy(n: int) -> list[subprocess.Popen]:
    return [subprocess.Popen(BUSY_ARGV, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL) for _ in range(n)]


def stop_busy(procs: list[subprocess.Popen]) -> None:
    """Stop the bench's own busy processes, by PID."""
    for p in procs:
        if p.poll() is None:
            p.kill()
    for p in procs:
        p.wait()


def one_run(scenario: Path, out: Path, label: str) -> dict:
    """`mrclab run <scenario> --short --transport mrc` into out/label; MRC's summary."""
    from emulation.run import runner  # deferred: Mininet and the runner, only when the bench runs
    parent = out / label
    parent.mkdir(parents=True, exist_ok=True)
    rc = runner.main([str(scenario), "--short", "--transport", "mrc", "--out-dir", str(parent)])
    runs = sorted(parent.glob("*/mrc/summary.json"))
    if not runs:
        raise RuntimeError(f"the {label} run wrote no summary (exit code {rc})")
    import json
    summary = json.loads(runs[-1].read_text())
    summary["_exit_code"] = rc
    summary["_run_dir"] = str(runs[-1].parent.parent)
    return summary


def median_iteration_ms(summary: dict) -> float | None:
    times = [t for t in summary.get("iteration_times_ms") or [] if t and t > 0]
    return round(statistics.median(times), 2) if times else None


def fidelity_bench(scenario: Path, busy: int = 2, out: Path | None = None) -> dict:
    try:
        text = scenario.read_text()
    except OSError as exc:
        raise UsageError(f"cannot read scenario {scenario}: {exc.strerror or exc}") from None
    scale = scenario_time_scale(text)
    out = out or Path(tempfile.mkdtemp(prefix="mrclab-bench-fidelity-"))
    out.mkdir(parents=True, exist_ok=True)
    text = unpin_short(text)
    scenario = out / scenario.name
    scenario.write_text(text)
    idle = one_run(scenario, out, "idle")
    if scale == "auto":
        scale = idle.get("time_scale", scale)
        if scale == "auto":
            raise RuntimeError("the idle run did not record the time scale it used")
        scenario.write_text(pin_time_scale(text, scale))
    procs = start_busy(busy)
    try:
        loaded = one_run(scenario, out, "loaded")
    finally:
        stop_busy(procs)
    idle_ms, loaded_ms = median_iteration_ms(idle), median_iteration_ms(loaded)
    figures = {
        "scenario": str(scenario), "time_scale": scale, "busy_processes": busy,
        "idle_median_ms": idle_ms, "loaded_median_ms": loaded_ms,
        "ratio": (round(loaded_ms / idle_ms, 3) if idle_ms and loaded_ms else None),
        "idle_verdict": (idle.get("fidelity") or {}).get("verdict"),
        "loaded_verdict": (loaded.get("fidelity") or {}).get("verdict"),
        "idle_violations": [v.get("invariant") for v in
                            (idle.get("fidelity") or {}).get("violations") or []],
        "loaded_violations": [v.get("invariant") for v in
                              (loaded.get("fidelity") or {}).get("violations") or []],
        "idle_cpu_busy": (idle.get("cpu") or {}).get("busy_fraction"),
        "loaded_cpu_busy": (loaded.get("cpu") or {}).get("busy_fraction"),
        "idle_run": idle["_run_dir"], "loaded_run": loaded["_run_dir"],
    }
    print(f"bench fidelity: {scenario.name} --short over mrc, time scale {scale}, "
          f"{busy} busy process(es) in the loaded run")
    print(f"  idle:   median iteration {idle_ms} ms, fidelity {figures['idle_verdict']} "
          f"{figures['idle_violations'] or ''}")
    print(f"  loaded: median iteration {loaded_ms} ms, fidelity {figures['loaded_verdict']} "
          f"{figures['loaded_violations'] or ''}")
    print(f"  ratio loaded / idle: {figures['ratio']}")
    return figures
