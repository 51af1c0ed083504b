"""The hostile corpus's inputs to the tools around a run (see __init__.py for the rest):

  CAPTURE_RUN_CASES  damaged captures and clocks inside a whole run with captures (analyze)
  SWEEP_CASES        sweep files and base scenarios (`mrclab sweep FILE --validate-only`)
  COMPARE_CASES      a damaged or planted run B (`mrclab compare A B`)
  WIRESHARK_CASES    a planted run for `mrclab wireshark`
  LATEST_CASES       results/ trees for `mrclab analyze latest`

Each case is a function that changes what the test built, and what must come out: "error" (exit
2 naming the text) or "handled" (exit 0, the text in the output, nothing written through a link).
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from tests.helpers import hostile_corpus as C

EXPERIMENTS = Path(__file__).resolve().parents[3] / "experiments"
BASE_SCENARIO = EXPERIMENTS / "random-loss.toml"


def _only_capture(data: bytes):
    def change(run: Path):
        next(run.glob("mrc/**/*.pcap")).write_bytes(data)
    return change


def _clock_at_the_end_of_time(run: Path):
    for p in [run / "clock.json", *run.glob("*/clock.json")]:
        p.write_text(json.dumps({"monotonic_ns": 10**10, "realtime_ns": 2**63 - 1}))


def _flip_a_timestamp(run: Path):
    p = next(run.glob("mrc/**/*.pcap"))
    data = bytearray(p.read_bytes())
    data[24 + 3] ^= 0x40               # the first record's ts_sec, high byte: ~34 years later
    p.write_bytes(bytes(data))


# name -> (change to a run of tests/helpers/synth.make_run, expected, text)
CAPTURE_RUN_CASES = {
    **{f"the only mrc capture: {name}": (_only_capture(data), "handled", "report:")
       for name, (_, data) in C.CAPTURE_CASES.items()},
    "clock.json realtime_ns = 2**63-1": (_clock_at_the_end_of_time, "handled", "skipped"),
    "a bit-flipped pcap timestamp": (_flip_a_timestamp, "handled", "skipped"),
}


def _sweep(text: str, base: str | None = None):
    """A sweep-file maker: `text` below a `scenario =` line naming the shipped base (or a base
    of text `base` written beside it)."""
    def make(tmp: Path) -> str:
        scenario = BASE_SCENARIO
        if base is not None:
            scenario = tmp / "base.toml"
            scenario.write_text(base)
        path = tmp / "sweep.toml"
        path.write_text(f'scenario = "{scenario}"\n' + text)
        return str(path)
    return make


def _fifo(which: str):
    def make(tmp: Path) -> str:
        os.mkfifo(tmp / "fifo.toml")
        if which == "sweep":
            return str(tmp / "fifo.toml")
        path = tmp / "sweep.toml"
        path.write_text(f'scenario = "{tmp / "fifo.toml"}"\n[grid]\n"fabric.planes" = [2]\n')
        return str(path)
    return make


def _big_base(tmp: Path) -> str:
    base = tmp / "base.toml"
    base.write_text(BASE_SCENARIO.read_text())
    with open(base, "r+b") as f:          # 100 MB, sparse: the tail is holes read as zeros
        f.truncate(100 << 20)
    path = tmp / "sweep.toml"
    path.write_text(f'scenario = "{base}"\n[grid]\n"fabric.planes" = [2]\n')
    return str(path)


GRID = '[grid]\n"faults[0].percent" = [0.0, 1.0]\n'


def _keys(values: int) -> str:
    """Six grid keys of `values` values each: values^6 points."""
    return "".join(f'"options.k{i}" = [{", ".join(map(str, range(values)))}]\n' for i in range(6))
SIX_KEYS = "".join(f'"options.k{i}" = [{", ".join(map(str, range(100)))}]\n' for i in range(6))
# name -> (sweep file maker, text of the error)
SWEEP_CASES = {
    "a FIFO as the sweep file": (_fifo("sweep"), "FIFO"),
    "a FIFO as the base scenario": (_fifo("base"), "FIFO"),
    "a base scenario with a TOML syntax error": (
        _sweep('[grid]\n"fabric.planes" = [2]\n', base="[fabric\nplanes = 2\n"), "not valid TOML"),
    "a 100 MB base scenario": (_big_base, "at most"),
    "name = 5": (_sweep("name = 5\n" + GRID), "name must be a string"),
    "a 5,000-digit list index": (_sweep(f'[grid]\n"faults[{"9" * 5000}].percent" = [1.0]\n'),
                                 "is not a key name"),
    "a 100^6-point grid": (_sweep("[grid]\n" + _keys(100)), "at most 1000"),
    "a 10^6-point grid": (_sweep("[grid]\n" + _keys(10)), "at most 1000"),
    "a baseline that is not an x value": (_sweep("baseline = 0.7\n" + GRID), "baseline must be"),
    "a NaN baseline": (_sweep("baseline = nan\n" + GRID), "baseline must be"),
    "NaN x values": (_sweep('[grid]\n"faults[0].percent" = [0.0, nan]\n'), "finite numbers"),
}


def _summary_field(key, value):
    def change(run: Path):
        path = run / "tcp" / "summary.json"
        s = json.loads(path.read_text())
        s[key] = value
        path.write_text(json.dumps(s))
    return change


def _replace(rel: str, make):
    def change(run: Path):
        path = run / rel
        if path.is_symlink() or path.is_file():
            path.unlink()
        path.parent.mkdir(parents=True, exist_ok=True)
        make(path, run)
    return change


def _sibling_link(run: Path):
    evil = run.parent / (run.name + "-evil")
    evil.mkdir()
    (evil / "x").write_text("planted")
    (run / "tcp" / "extra").symlink_to(evil / "x")


# name -> (change to run B, "error" or "handled", text); run B is a copy of run A
COMPARE_CASES = {
    "summary.json is a FIFO": (_replace("tcp/summary.json", lambda p, r: os.mkfifo(p)), "error",
                               "not a regular file"),
    "scenario.toml is a FIFO": (_replace("scenario.toml", lambda p, r: os.mkfifo(p)), "error",
                                "not a regular file"),
    "summary.json nested 100000 deep": (
        _replace("tcp/summary.json", lambda p, r: p.write_text("[" * 100000 + "]" * 100000)),
        "error", "no readable summary.json"),
    "iteration_times_ms is a string": (_summary_field("iteration_times_ms", "123"), "error",
                                       "iteration_times_ms is not a list"),
    "nccl is a list": (_summary_field("nccl", [1, 2]), "error", "nccl is not an object"),
    "analysis/ links out of the run": (
        _replace("analysis", lambda p, r: p.symlink_to(r.parent)), "error", "outside the run"),
    "a link into a sibling run-evil/": (_sibling_link, "error", "outside the run"),
    "analysis/compare.png is a link": (
        _replace("analysis/compare.png", lambda p, r: p.symlink_to(r / "scenario.toml")),
        "handled", "goodput overlaid"),
}


def _fifo_capture(run: Path):
    os.mkfifo(next(run.glob("mrc/**/*.pcap")).parent / "h9-p0.pcap")


def _linked_output(run: Path):
    (run / "analysis").mkdir(exist_ok=True)
    (run / "analysis" / "captures-all.pcapng").symlink_to(run / "scenario.toml")


# name -> (change to a run with captures, "error" or "handled", text)
WIRESHARK_CASES = {
    "a FIFO as a capture": (_fifo_capture, "error", "not a regular file"),
    "the merged capture's name is a link": (_linked_output, "handled", "merged"),
}


def _newer_sweeps(results: Path):
    (results / "sweeps" / "s" / "tcp").mkdir(parents=True)
    (results / "sweeps" / "s" / "tcp" / "worker-h0.jsonl").write_text("")


def _newer_unfinished(results: Path):
    shutil.copytree(next(results.iterdir()), results / "zz-running")
    (results / "zz-running" / "summary.json").unlink()


# name -> change to results/ holding one finished run, made newest; `analyze latest` must
# still pick the finished run
LATEST_CASES = {"results/sweeps is the newest directory": _newer_sweeps,
                "a run still being written is the newest": _newer_unfinished}
