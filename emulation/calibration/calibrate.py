"""`mrclab calibrate` (emulation/calibration/calibrate_cli.py): the smallest time scale (model/timescale.py) at
which this machine emulates the scenario's fabric faithfully for one transport, cached per
machine, fabric and transport.

Each transport is calibrated on its own, because each costs the machine a different CPU per
emulated second and each is judged on its own invariants: MRC's endpoints keep per-path state and SACKs for
every frame, RoCE's a single path per QP, kernel TCP does its per-packet work in the kernel.
One k for all would run RoCE's and TCP's seconds-long stalls as slowly as MRC needs, for no
fidelity in return; every result is in emulated time, so transports run at different k compare.
A trial is a short run of the scenario ([short] version when it has one) over that transport at
a time scale k; it passes when its fidelity verdict is "ok" (the run's summary.json `fidelity`,
emulation's fidelity monitor). A trial must judge what a full run will: one too short for the
workers' lateness check to have its samples (an invariant without samples does not vote) runs
again with the iterations it needs, and so does every later trial. The search doubles k from 1 (1, 2, 4, ..., 64) up to the first
pass, then bisects between the last failure and that pass until they are within BISECT_RATIO
of each other; the answer is the smallest k that passed, once it has passed again
(CONFIRMATIONS); a k that fails its confirmation is a failure, and with no pass standing above it
the search tries one BISECT_RATIO step above it before the ladder's next rung. Fidelity does not
fall off a cliff at one k on a shared machine, so a few trials near the threshold are worth more
than a precise number, and a k that passed once by luck is not one a full run holds.

The answer is cached in results/.calibration/<key>.json, the key built from the host name, the
CPU model, the fabric as declared (every [fabric] key but time_scale, the trimming option, the
transport) and a digest of the project's source code: another machine, another fabric, another
transport or another build of the endpoints and switches calibrates again. `mrclab run` with
`time_scale = "auto"` uses each transport's cached k, or calibrates that transport first.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import socket
import tempfile
import time
from pathlib import Path

from analysis.fidelity import LATENESS_MIN_SAMPLES
from analysis.fidelity_verdict import (DEGRADED, HELD_BEYOND_QUEUE, INVALID, LINK_PACING, OK,
                                       OVS_STALLS, RECEIVE_LATENESS, RECOVERY_WINDOWS,
                                       TIMER_LATENESS, WORKER_LATENESS)
from emulation.config.scenario import Scenario
from model import timescale

REPO_ROOT = Path(__file__).resolve().parents[2]
CACHE_DIR = REPO_ROOT / "results" / ".calibration"
# The ladder's top leaves room above what the shipped fabrics need on a small VM, and no more:
# a trial's wall time grows with k (docs/results/2026-11-30-calibration-confirmation.md).
DOUBLING = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)
# Stop bisecting once the failing and passing k are this close: each trial is a fabric run.
BISECT_RATIO = 1.25
# Trials the smallest passing k must pass again before it is the answer. A short trial's p99
# lateness rests on a few hundred samples per worker, so identical trials near the threshold
# differ widely and one pass there can be luck that a full run then loses
# (docs/results/2026-11-30-calibration-confirmation.md). A failed confirmation makes that k a
# failure and the search goes on above it.
CONFIRMATIONS = 1
# How many times the samples the lateness checks need a trial is sized for: the size comes from
# one trial's duration, and a later trial at a larger k or a busier moment may run shorter.
SAMPLE_MARGIN = 2.0
SOURCE_PACKAGES = ("model", "traffic", "controller", "emulation")
NOT_HOLDING = (DEGRADED, INVALID)          # the verdicts that say a run's k did not hold
# The invariants a process that waited for a CPU breaks, each given more room by a larger k: its
# lateness, and in the captures a packet held beyond what its queues can hold or a backlogged
# port that sent late. A raise that did not shrink them is not followed by another
# (raise_after_run), so one broken for another reason costs one step of k, not the search's top.
LATENESS_INVARIANTS = (TIMER_LATENESS, RECEIVE_LATENESS, WORKER_LATENESS, OVS_STALLS,
                       RECOVERY_WINDOWS, HELD_BEYOND_QUEUE, LINK_PACING)
EXIT_NO_PASS = 4             # no k of the search kept fidelity "ok"
# Full runs a cache entry remembers (oldest dropped first), carried from build to build: a
# short trial can pass at a k a full run of the same fabric does not hold (fewer samples,
# fewer heavy moments), and that knowledge outlives a change of code (floor_of).
FULL_RUNS_KEPT = 20


class CalibrationError(RuntimeError):
    """A calibration that could not give an answer; the message says why and what to do.
    `trials`: the trials it ran (dicts as in a result's "trials"), none when it ran none."""

    def __init__(self, message: str, trials: list[dict] | None = None):
        super().__init__(message)
        self.trials = trials or []


@dataclasses.dataclass
class Trial:
    time_scale: float
    verdict: str
    margins: dict


def search(measure, doubling=DOUBLING, ratio: float = BISECT_RATIO,
           confirmations: int = CONFIRMATIONS, start: float | None = None,
           floor: float | None = None,
           least: float | None = None) -> tuple[float | None, list[Trial]]:
    """(the smallest k that passed, then passed `confirmations` more times in a row, or None;
    every trial in order). measure(k) -> Trial.

    start: the k to try first instead of the ladder's bottom (previous_scale: what this fabric
    needed here before). From a pass there the search steps down by `ratio` until a k fails,
    so the answer is as close to the threshold as the bisection brings it; from a failure it
    doubles on from the ladder's rungs above it. A recalibration whose answer moved little
    costs three or four trials near it instead of the whole ladder.

    floor: a k known not to hold (floor_of: a full run of this fabric was late there, which its
    short trials did not show); never tried, counted as a failure, so the answer is above it.
    least: the smallest answer allowed; no k below it is tried (least_above: where the late
    full run's raise put this fabric, since short trials pass below what full runs hold)."""
    lowest = max(doubling[0], least or doubling[0])
    trials: list[Trial] = []

    def passes(k: float) -> bool:
        trial = measure(k)
        trials.append(trial)
        return trial.verdict == OK

    failed, passed = (None if floor is None else float(floor)), None
    if start is not None and (failed is None or start > failed):
        start = min(max(float(start), lowest), doubling[-1])
        if passes(start):
            passed = start
        else:
            failed = start
        while failed is None and passed > lowest:
            below = max(lowest, round(passed / ratio, 2))
            if passes(below):
                passed = below
            else:
                failed = below
    while True:
        if passed is None:
            step = next((k for k in doubling if (failed is None or k > failed) and k >= lowest),
                        None)
            if step is None:
                return None, trials
            if passes(step):
                passed = step
            else:
                failed = step
            continue
        while failed is not None and passed / failed > ratio and passed > lowest:
            mid = max(lowest, round((failed + passed) / 2, 2))
            if passes(mid):
                passed = mid
            else:
                failed = mid
        if all(passes(passed) for _ in range(confirmations)):
            return passed, trials
        failed, passed = passed, _smallest_pass_above(trials, passed)
        near = min(max(round(failed * ratio, 2), lowest), doubling[-1])
        if passed is None and near > failed:
            # a k that passed once and then failed sits at the threshold: one step of `ratio`
            # above it is the likeliest answer, and cheaper to try than the ladder's next rung
            if passes(near):
                passed = near
            else:
                failed = near


def _smallest_pass_above(trials: list[Trial], k: float) -> float | None:
    """The smallest time scale above k that passed, or None. (Every failure so far is at k or
    below: the bisection fails only below the pass it bisects towards.)"""
    return min((t.time_scale for t in trials if t.verdict == OK and t.time_scale > k),
               default=None)


def verdict_of(summaries: list[dict]) -> Trial:
    """The trial's outcome from its transports' summaries: "ok" only when every one has a
    fidelity verdict "ok"; the margins are the smallest per invariant over them."""
    verdicts, margins = [], {}
    for s in summaries:
        fid = s.get("fidelity")
        if not isinstance(fid, dict) or "verdict" not in fid:
            raise CalibrationError("the run's summary has no fidelity verdict: this build has no "
                                   "fidelity monitor to calibrate against")
        verdicts.append(fid["verdict"])
        for name, value in (fid.get("margins") or {}).items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                margins[name] = min(value, margins.get(name, value))
    verdict = OK if verdicts and all(v == OK for v in verdicts) else next(
        (v for v in verdicts if v != OK), "invalid")
    return Trial(float(summaries[0].get("time_scale") or 1.0) if summaries else 1.0, verdict,
                 margins)


# ---------------------------------------------------------------- cache key


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def code_digest(root: Path = REPO_ROOT) -> str:
    """sha256 over the project's Python and C sources (the endpoints, switches' programs and
    controller whose CPU cost the time scale measures)."""
    h = hashlib.sha256()
    for package in SOURCE_PACKAGES:
        for path in sorted((root / package).rglob("*")):
            if path.suffix in (".py", ".pyx", ".c", ".h") and path.is_file():
                h.update(str(path.relative_to(root)).encode())
                h.update(path.read_bytes())
    return h.hexdigest()[:16]


def fabric_description(scn: Scenario, transport: str) -> dict:
    """What of the scenario sets the machine's load per emulated second."""
    spec = scn.spec.to_dict()
    what = {"fabric": spec, "routing": scn.routing, "trimming": scn.trimming,
            "switch_buffer_kb": scn.switch_buffer_kb, "scheduling": scn.scheduling,
            "capture": scn.capture,
            "transport": transport}
    if scn.cluster is not None and len(scn.cluster.servers) > 1:   # the servers share the load
        what["cluster"] = {"servers": list(scn.cluster.servers),
                           "placement": scn.cluster.placement}
    return what


def trial_of(run: Scenario, short: Scenario | None) -> Scenario:
    """The scenario the trials run: the short version (fewer iterations; its [fabric], so its
    cache key, is the run's) with the run's captures and servers, or the run itself when it
    has none. A trial loads the machines as the run will: a tcpdump per host port is work on
    the same cores, and a k found without it leaves the first full run late (raise_after_run
    would only mend the next one); a run over servers shares its load among them."""
    return run if short is None else dataclasses.replace(short, capture=run.capture,
                                                         cluster=run.cluster)


def machine_and_fabric(scn: Scenario, transport: str) -> dict:
    """The cache key's facts but the code: this machine and what of the scenario loads it."""
    return {"host": socket.gethostname(), "cpu": cpu_model(), **fabric_description(scn, transport)}


def cache_key(scn: Scenario, transport: str, digest: str | None = None) -> tuple[str, dict]:
    what = {**machine_and_fabric(scn, transport), "code": digest or code_digest()}
    text = json.dumps(what, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:20], what


def _read_entry(path: Path) -> dict | None:
    """A cache file's calibration, or None when it is missing, not JSON or holds no usable k."""
    try:
        data = json.loads(Path(path).read_text())
        timescale.check(data.get("time_scale") if isinstance(data, dict) else None)
    except (OSError, ValueError, timescale.TimeScaleError):
        return None
    return data


def cached(scn: Scenario, transport: str, cache_dir: Path = CACHE_DIR) -> dict | None:
    key, _ = cache_key(scn, transport)
    return _read_entry(_entry_path(cache_dir, key))


# ---------------------------------------------------------------- trials on the fabric


def iterations_for_samples(summary: dict, iterations: int,
                           goodput_interval_ms: float) -> int | None:
    """The iterations a trial needs when its workers logged too few goodput samples for their
    lateness to be judged (the invariant then does not vote, and a full run, which has the
    samples, can find the k late): SAMPLE_MARGIN times the samples the check needs over the
    trial's measured emulated duration, scaled from its iterations. None when the invariant
    was measured, or the trial's duration is unknown."""
    fid = summary.get("fidelity") if isinstance(summary, dict) else None
    unmeasured = fid.get("unmeasured") if isinstance(fid, dict) else None
    if not isinstance(unmeasured, dict) or WORKER_LATENESS not in unmeasured:
        return None
    start, end = summary.get("timed_start_ns"), summary.get("traffic_end_ns")
    if not all(isinstance(t, int) and not isinstance(t, bool) for t in (start, end)) \
            or end <= start:
        return None
    need_ns = SAMPLE_MARGIN * LATENESS_MIN_SAMPLES * goodput_interval_ms * 1e6
    return max(iterations + 1, math.ceil(iterations * need_ns / (end - start)))


def measure_on_fabric(scn: Scenario, transport: str, work_dir: Path, run_transport, log=print):
    """measure(k) for search(): one short run of `transport` at time scale k, through the
    runner's run_transport (passed in: the runner itself resolves "auto" through this module).
    A trial too short for the workers' lateness to be judged is run again at once with the
    iterations it needs (iterations_for_samples), and so is every later trial."""

    trials_at: dict[float, int] = {}
    # the trials' scenario; "extend" off once more iterations did not bring the samples (a
    # schedule whose traffic ends a few iterations after its last fault is not lengthened so)
    trial_scn = {"scn": scn, "extend": True}

    def run(k: float) -> dict:
        # a trial of its own directory: a second one at k over the first's logs would read
        # the workers done at once and judge the first trial's files again
        n = trials_at[k] = trials_at.get(k, 0) + 1
        tdir = Path(work_dir) / (f"k{k:g}" if n == 1 else f"k{k:g}-{n}") / transport
        return run_transport(dataclasses.replace(trial_scn["scn"], time_scale=k), transport,
                             tdir)

    def measure(k: float) -> Trial:
        started = time.monotonic()
        summary = run(k)
        current = trial_scn["scn"]
        more = iterations_for_samples(summary, current.collective.iterations,
                                      current.goodput_interval_ms)
        if more is not None and trial_scn["extend"]:
            log(f"mrclab calibrate: {transport}'s trial was too short for its workers' "
                f"lateness to be judged: the trials run {more} iterations from here")
            trial_scn["scn"] = dataclasses.replace(current, collective=dataclasses.replace(
                current.collective, iterations=more))
            summary = run(k)
            if iterations_for_samples(summary, more, current.goodput_interval_ms) is not None:
                trial_scn.update(scn=current, extend=False)     # longer bought nothing
                log(f"mrclab calibrate: {transport}'s longer trial still lacks the samples: "
                    f"the workers' lateness stays unjudged in its trials, back to "
                    f"{current.collective.iterations} iterations")
        trial = verdict_of([summary])
        trial.time_scale = k
        log(f"mrclab calibrate: {transport} at time_scale {k:g}: fidelity {trial.verdict} "
            f"({time.monotonic() - started:.0f} s)")
        return trial
    return measure


def previous_scale(scn: Scenario, transport: str = "mrc",
                   cache_dir: Path = CACHE_DIR) -> dict | None:
    """The newest calibration of this fabric on this machine at any build (the cache entry last
    written whose machine and fabric equal this run's, code aside): {"time_scale", "code",
    "full_runs"}, or None. A change of code changes the cache key, yet rarely the machine's k by
    much."""
    # as a cache file holds it (JSON: a tuple reads back as a list)
    ours = json.loads(json.dumps(machine_and_fabric(scn, transport)))
    best, best_mtime = None, None
    for path in Path(cache_dir).glob("*.json"):
        data = _read_entry(path)
        try:
            machine, mtime = dict(data["machine"]), path.stat().st_mtime
        except (OSError, KeyError, TypeError, ValueError):
            continue            # not a calibration this build can read: no hint from it
        code = machine.pop("code", None)
        if machine == ours and (best_mtime is None or mtime > best_mtime):
            best, best_mtime = {"time_scale": float(data["time_scale"]), "code": code,
                                "full_runs": full_runs_of(data)}, mtime
    return best


def full_runs_of(entry: dict) -> list[dict]:
    """The entry's record of full runs at its k, oldest first: [{"k", "held", ...}] (a record
    that is not one is left out: a cache file is only a hint). An entry written before the
    record was kept says only where its raises came from: each a late run at its "from"."""
    runs = entry.get("full_runs") if isinstance(entry, dict) else None
    if isinstance(entry, dict) and runs is None and isinstance(entry.get("raised"), list):
        runs = [{"k": r.get("from"), "held": False} for r in entry["raised"]
                if isinstance(r, dict)]
    return [r for r in runs if isinstance(r, dict) and isinstance(r.get("held"), bool)
            and isinstance(r.get("k"), (int, float)) and not isinstance(r["k"], bool)
            ] if isinstance(runs, list) else []


def floor_of(full_runs: list[dict]) -> float | None:
    """The largest k at which a full run of this fabric was late with no later full run holding
    at that k or below it (a later build that held there lifts it); None when there is none."""
    floor = None
    for i, run in enumerate(full_runs):
        if run["held"] or any(later["held"] and later["k"] <= run["k"]
                              for later in full_runs[i + 1:]):
            continue
        floor = max(float(run["k"]), floor or 0.0)
    return floor


def least_above(floor: float | None, doubling=DOUBLING) -> float | None:
    """The smallest k a search may answer above a floor: one bisection step over it, rounded up,
    as raise_after_run moved the fabric after the late full run there. Short trials pass below
    what full runs hold (fewer samples, fewer heavy moments), so an answer between the floor
    and that step would repeat the late run."""
    if floor is None:
        return None
    return float(min(math.ceil(floor * BISECT_RATIO), doubling[-1]))


def calibrate(scn: Scenario, transport: str = "mrc", cache_dir: Path = CACHE_DIR,
              measure=None, run_transport=None, log=print, max_scale: float | None = None,
              from_previous: bool = True) -> dict:
    """Search, cache and return {"time_scale", "margins", "trials", "key", "machine",
    "started_at"}. measure(k) -> Trial, or the runner's run_transport to measure on the fabric.
    max_scale: try no k above it (each doubling doubles a trial's wall time). from_previous:
    start the search at this fabric's previous calibration on this machine, if any
    (previous_scale), else at the ladder's bottom."""
    key, what = cache_key(scn, transport)
    doubling = tuple(k for k in DOUBLING if max_scale is None or k <= max_scale) or DOUBLING[:1]
    previous = previous_scale(scn, transport, cache_dir) if from_previous else None
    start = None if previous is None else min(previous["time_scale"], doubling[-1])
    full_runs = [] if previous is None else previous["full_runs"]
    floor = floor_of(full_runs)
    least = least_above(floor, doubling)
    if start is not None:
        log(f"mrclab calibrate: {transport} on this fabric needed time_scale "
            f"{previous['time_scale']:g} on this machine before (code {previous['code']}): the "
            f"search starts at {start:g}")
    if floor is not None:
        log(f"mrclab calibrate: a full run of {transport} on this fabric did not hold at "
            f"time_scale {floor:g}, where its short trials had: the search answers "
            f"{least:g} or more, one step above it")
    with tempfile.TemporaryDirectory(prefix="mrclab-calibrate-") as work:
        measure = measure or measure_on_fabric(scn, transport, Path(work), run_transport, log)
        k, trials = search(measure, doubling, start=start, floor=floor, least=least)
    if k is None:
        raise CalibrationError(
            f"no time scale up to {doubling[-1]:g} kept fidelity \"ok\" for {transport} on "
            f"{scn.name}: the "
            f"machine is too busy or the fabric too large; set [fabric] time_scale by hand or "
            f"use [mrc.qp] loss_policy = \"tolerant\" (docs/fidelity-timescale.md)",
            [dataclasses.asdict(t) for t in trials])
    best = next(t for t in trials if t.time_scale == k)
    result = {"time_scale": k, "margins": best.margins,
              "trials": [dataclasses.asdict(t) for t in trials], "key": key, "machine": what,
              "started_at": trials[0].time_scale if trials else None, "floor": floor,
              "least": least,
              "full_runs": full_runs[-FULL_RUNS_KEPT:],
              "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    Path(cache_dir).mkdir(parents=True, exist_ok=True)
    _write_cache(key, result, cache_dir)
    return result


def raise_after_run(scn: Scenario, summary: dict, run_dir: Path | None = None,
                    cache_dir: Path = CACHE_DIR) -> dict | None:
    """After a full run of one transport at its cached k in which its fidelity was "degraded"
    or "invalid" on a lateness invariant: the short trials held at that k, the run did not (more
    samples, more recovery windows, a heavier moment), so that transport's cached k grows by one
    bisection step (ceil(k x BISECT_RATIO), at most the search's largest k) and its next run on
    this fabric starts at a k that holds. The raise is recorded in the cache with the run that
    showed it. summary: the transport's summary.json (its "transport" names the cache entry).
    Every full run at the cached k that held or was late is recorded in the entry's
    "full_runs", which later calibrations of the fabric carry over and search above (floor_of).

    A raise must have helped to be followed by another: lateness that comes from sharing the
    CPU is a wall time, so its ratio to an emulated RTT falls as k grows. When the run at a
    raised k is no less late (its worst lateness ratio at least the one that caused the raise),
    more k buys nothing but wall time; the cache keeps k and records why.
    Returns {"transport", "from", "to", "worst_ratio"} (plus "previous_ratio" when the raise
    stopped, "to" then equal to "from") when the run broke a lateness invariant, else None."""
    transport = str(summary.get("transport", "")) if isinstance(summary, dict) else ""
    # the key once: it hashes every source file, and the entry is read and written under it
    key = cache_key(scn, transport)[0] if transport else None
    hit = _read_entry(_entry_path(cache_dir, key)) if key else None
    if hit is None:
        return None
    k = float(hit["time_scale"])
    late = _late_at(summary, k)
    if not late and not _held_at(summary, k):
        return None             # not a run at this k, or broken for another reason: no record
    hit["full_runs"] = (full_runs_of(hit) + [{
        "k": k, "held": not late, "code": (hit.get("machine") or {}).get("code"),
        "run": None if run_dir is None else str(run_dir)}])[-FULL_RUNS_KEPT:]
    if not late or k >= DOUBLING[-1]:
        _write_cache(key, hit, cache_dir)
        return None
    worst = max(_lateness_ratios(summary, k), default=None)
    entry = {"worst_ratio": worst, "run": None if run_dir is None else str(run_dir),
             "at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    last = (hit.get("raised") or [None])[-1]
    previous = last.get("worst_ratio") if isinstance(last, dict) and last.get("to") == k else None
    if isinstance(previous, (int, float)) and worst is not None and worst >= previous:
        hit["not_raised"] = {"at_k": k, "previous_ratio": previous, **entry}
        _write_cache(key, hit, cache_dir)
        return {"transport": transport, "from": k, "to": k, "worst_ratio": worst,
                "previous_ratio": previous}
    new_k = float(min(math.ceil(k * BISECT_RATIO), DOUBLING[-1]))
    hit["time_scale"] = new_k
    hit.setdefault("raised", []).append({"from": k, "to": new_k, **entry})
    _write_cache(key, hit, cache_dir)
    return {"transport": transport, "from": k, "to": new_k, "worst_ratio": worst}


def _entry_path(cache_dir: Path, key: str) -> Path:
    """Where the cache keeps the calibration of `key`."""
    return Path(cache_dir) / f"{key}.json"


def _write_cache(key: str, hit: dict, cache_dir: Path) -> None:
    _entry_path(cache_dir, key).write_text(json.dumps(hit, indent=2))


def _fidelity_at(summary, k: float) -> dict | None:
    """A transport's summary's fidelity record when its run was at k, else None (a summary that
    is not what the runner writes says nothing)."""
    fid = summary.get("fidelity") if isinstance(summary, dict) else None
    try:
        return fid if isinstance(fid, dict) and float(summary.get("time_scale") or 0) == k \
            else None
    except (TypeError, ValueError):
        return None


def _held_at(summary, k: float) -> bool:
    """Whether a transport's summary says its run at k kept fidelity "ok"."""
    return (_fidelity_at(summary, k) or {}).get("verdict") == OK


def _late_at(summary, k: float) -> bool:
    """Whether a transport's summary says the run at k broke a lateness invariant."""
    return bool(_lateness_violations(summary, k))


def _lateness_violations(summary, k: float) -> list[dict]:
    fid = _fidelity_at(summary, k)
    if fid is None or fid.get("verdict") not in NOT_HOLDING:
        return []
    return [v for v in fid.get("violations") or []
            if isinstance(v, dict) and v.get("invariant") in LATENESS_INVARIANTS]


def _lateness_ratios(summary, k: float) -> list[float]:
    """The measured/bound ratios of the lateness invariants a summary's run broke at k."""
    return [float(v["ratio"]) for v in _lateness_violations(summary, k)
            if isinstance(v.get("ratio"), (int, float)) and not isinstance(v["ratio"], bool)]


def learn_after_run(scn: Scenario, run_dir: Path, cache_dir: Path | None = None,
                    log=print) -> list[dict]:
    """raise_after_run for each transport's summary a finished run left in run_dir, and the
    line that tells the user of each raise (or of a raise that stopped)."""
    raises = []
    for path in sorted(Path(run_dir).glob("*/summary.json")):
        try:
            summary = json.loads(path.read_text())
        except (OSError, ValueError):
            continue            # a transport without a readable summary says nothing of k
        raised = raise_after_run(scn, summary, run_dir, cache_dir or CACHE_DIR)
        if raised is None:
            continue
        raises.append(raised)
        name = raised["transport"]
        if "previous_ratio" in raised:
            log(f"mrclab run: the calibrated time_scale {raised['from']:g} did not hold for "
                f"{name} (lateness {raised['worst_ratio']:.2f}x its bound), and the raise to it "
                f"did not shrink that lateness ({raised['previous_ratio']:.2f}x before): lateness "
                f"that does not fall as k grows is not this machine's CPU share, so {name}'s "
                f"calibration stays at {raised['to']:g} (docs/fidelity-timescale.md)")
        else:
            log(f"mrclab run: the calibrated time_scale {raised['from']:g} did not hold for "
                f"{name}; its calibration on this fabric now says {raised['to']:g}: the next "
                f"run of it uses that")
    return raises


def resolve(scn: Scenario, transport: str, run_transport=None, cache_dir: Path = CACHE_DIR,
            log=print, measure=None, trial: Scenario | None = None) -> float:
    """The number a `time_scale = "auto"` scenario runs `transport` at: cached, else calibrated
    now with `trial` (the scenario's short version; default `scn` itself), whose fabric is scn's."""
    hit = cached(scn, transport, cache_dir)
    if hit is not None:
        log(f"mrclab run: {transport}: time_scale auto = {hit['time_scale']:g} (calibrated on "
            f"this machine {hit.get('measured_at', '?')}, cached in {cache_dir})")
        return float(hit["time_scale"])
    log(f"mrclab run: {transport}: time_scale = \"auto\" and no calibration of this fabric for "
        f"{transport} on this machine at this build: calibrating once (short {transport} runs "
        f"at k = 1, 2, 4, ..., or from its previous k on this fabric, until fidelity is "
        f"\"ok\"; cached afterwards)")
    started = time.monotonic()
    result = calibrate(trial or scn, transport, cache_dir, measure=measure,
                       run_transport=run_transport, log=log)
    log(f"mrclab run: {transport}: time_scale auto = {result['time_scale']:g} (calibrated in "
        f"{time.monotonic() - started:.0f} s over {len(result['trials'])} short runs, cached in "
        f"{cache_dir})")
    return float(result["time_scale"])
