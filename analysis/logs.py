"""Endpoint/worker JSONL event logs and the controller fault log -> pandas DataFrames.

Schema: the event log the workers and endpoints write (every line {"t_ns", "host", "event", ...}).
Logs are written by processes that may be killed mid-line, so loading is forgiving: every line
that parses into an object with the required keys becomes a row; every other line is reported
(file, line number, why) in `df.attrs["log_problems"]` and never raises.

Also here: finding a run's pieces (transport dirs, scenario fabric spec, summary) because the
loaders of pcap, metrics and the CLI all need the same answers.
"""
from __future__ import annotations

import math
import tomllib
from pathlib import Path

import pandas as pd

from analysis import jsonl
from analysis.jsonl import parse_json
from model.events import Event
from model.results import results_dir
from model.safe_read import NotRegularFile, read_regular
from model.topology import FabricSpec, SpecError, Topology

EVENT_REQUIRED = ("t_ns", "event")
FAULT_REQUIRED = ("t_ns", "action")
FAULT_LOG = "faults.jsonl"          # the controller's fault log, copied into each transport dir
NOT_EVENT_LOGS = (FAULT_LOG, "faults-applied.jsonl")   # + the runner's request/answer log
INT64_MAX = (1 << 63) - 1          # t_ns and other *_ns values become int64 columns
MAX_JSON_BYTES = 16 << 20          # summary, clock, counters, worker config: kB to a few MB

# The fields the analysis computes with, per event, and their kinds: a line whose field has
# another kind is reported and skipped, so one corrupt line (a process killed mid-write, a hand
# edit) never stops the analysis of the others. Fields not listed pass through untouched.
#   time: integer ns in 0..2^63-1; count: integer >= 0; number: finite number >= 0;
#   str: string; bool: true/false; table: JSON object; null counts as absent
COMMON_FIELDS = {"t_ns": "time", "event": "str", "host": "str", "action": "str", "a": "str",
                 "b": "str", "transport": "str"}
EVENT_FIELDS = {
    Event.GOODPUT: {"rx_bytes": "number", "tx_bytes": "number"},
    Event.ITERATION: {"iter": "count", "start_ns": "time", "end_ns": "time", "bytes": "number",
                  "collective": "str", "verified": "bool", "wrong": "count"},
    Event.EV_STATE: {"qp": "count", "ev": "count", "plane": "count", "new": "str", "old": "str"},
    Event.EV_SUSPECT: {"qp": "count", "ev": "count", "plane": "count"},
    Event.EV_CLEARED: {"qp": "count", "ev": "count", "plane": "count"},
    Event.RETRANSMIT: {"qp": "count"},
    Event.PHASE: {"phase": "str"},
    Event.COUNTERS: {"qps": "table"},
}
# fields without which an event says nothing the analysis can use
EVENT_NEEDS = {Event.GOODPUT: ("rx_bytes",),
               Event.ITERATION: ("iter", "start_ns", "end_ns", "collective"),
               Event.EV_STATE: ("qp", "ev", "new"), Event.EV_SUSPECT: ("qp", "ev"),
               Event.EV_CLEARED: ("qp", "ev")}


def _kind_ok(kind: str, value) -> bool:
    if kind == "str":
        return isinstance(value, str)
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "table":
        return isinstance(value, dict)
    if isinstance(value, bool):
        return False
    if kind in ("time", "count"):
        return isinstance(value, int) and 0 <= value <= INT64_MAX
    return isinstance(value, (int, float)) and math.isfinite(value) and value >= 0   # number


_KIND_NAMES = {"time": "an integer ns in 0..2^63-1", "count": "a non-negative integer",
               "number": "a non-negative number", "str": "a string", "bool": "true or false",
               "table": "an object"}


def record_problem(obj: dict, required=EVENT_REQUIRED, needs=EVENT_NEEDS) -> str | None:
    """Why a parsed log line cannot be a row (missing or mistyped field), or None. `needs`:
    per event, the fields its consumer cannot do without."""
    missing = [k for k in required if obj.get(k) is None]
    if missing:
        return f"missing {', '.join(missing)}"
    event = obj.get("event")
    kinds = dict(COMMON_FIELDS, **EVENT_FIELDS.get(event, {})) if isinstance(event, str) \
        else COMMON_FIELDS
    for key, kind in kinds.items():
        if obj.get(key) is not None and not _kind_ok(kind, obj[key]):
            return f"{key} is not {_KIND_NAMES[kind]} (got {_short(obj[key])})"
    if isinstance(event, str):
        missing = [k for k in needs.get(event, ()) if obj.get(k) is None]
        if missing:
            return f"{event} event without {', '.join(missing)}"
    return None


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def read_json(path, problems: list | None = None, what: str = "a JSON object"):
    """The JSON object of a small file (summary, clock, counters, worker config), or None if it
    is missing; an unreadable or non-object file is None too and is reported in `problems`."""
    path = Path(path)
    try:
        raw = read_regular(path, MAX_JSON_BYTES)
    except FileNotFoundError:
        return None
    except NotRegularFile as exc:
        _note(problems, f"{path.name}: not read ({str(exc).split(' ', 1)[-1]})")
        return None
    except OSError as exc:
        _note(problems, f"{path.name}: cannot read ({exc.strerror})")
        return None
    try:
        value = parse_json(raw)
    except ValueError as exc:
        _note(problems, f"{path.name}: not JSON ({exc.__class__.__name__}: {str(exc)[:60]})")
        return None
    if not isinstance(value, dict):
        _note(problems, f"{path.name}: not {what}, got {type(value).__name__}")
        return None
    return value


def _note(problems: list | None, text: str) -> None:
    if problems is not None:
        problems.append(text)


def read_jsonl(path, required=EVENT_REQUIRED) -> tuple[list[dict], list[str]]:
    """(records, problems) of one JSONL file; a bad line is a problem, not an exception."""
    problems: list[str] = []
    host = jsonl.log_host(path)
    records = jsonl.read_jsonl(path, problems, check=lambda obj: record_problem(obj, required)
                               or jsonl.contradiction(obj, host), missing_ok=False)
    return records, problems


def _frame(records: list[dict], problems: list[str], first: list[str]) -> pd.DataFrame:
    df = pd.DataFrame.from_records(records) if records else pd.DataFrame(columns=first)
    for c in first:
        if c not in df.columns:
            df[c] = pd.Series(dtype="object")
    df = df[first + [c for c in df.columns if c not in first]]
    if len(df):
        df["t_ns"] = df["t_ns"].astype("int64")
        df = df.sort_values("t_ns", kind="stable").reset_index(drop=True)
    for c in ("host", "event", "action", "transport"):
        if c in df.columns:
            df[c] = df[c].astype("category")
    df.attrs["log_problems"] = problems
    return df


# A run directory of the runner holds, per host, the worker's log (iterations, goodput of the
# collective) and, for mrc/roce, the endpoint's log (EV states, retransmissions, probes). Both
# count delivered bytes: the worker's goodput/counters are the ones kept, so nothing is counted
# twice; every other endpoint event is kept.
ENDPOINT_EVENTS_SHADOWED_BY_WORKER = frozenset({Event.GOODPUT, Event.COUNTERS})


def event_log_paths(run_dir) -> list[Path]:
    """Endpoint/worker logs: the runner's worker-*.jsonl plus endpoint-*.jsonl, else every
    *.jsonl that is not a fault log."""
    d = Path(run_dir)
    workers = sorted(d.glob("worker-*.jsonl"))
    if workers:
        return workers + sorted(d.glob("endpoint-*.jsonl"))
    return sorted(p for p in d.glob("*.jsonl") if p.name not in NOT_EVENT_LOGS)


def load_events(paths_or_dir) -> pd.DataFrame:
    """All event lines of the given files (or of every event log in a directory), time-sorted.

    A line without "host" gets the file's stem (h0.jsonl -> "h0")."""
    if isinstance(paths_or_dir, (str, Path)) and Path(paths_or_dir).is_dir():
        paths = event_log_paths(paths_or_dir)
    elif isinstance(paths_or_dir, (str, Path)):
        paths = [Path(paths_or_dir)]
    else:
        paths = [Path(p) for p in paths_or_dir]
    per_file, problems = {}, []
    have_workers = any(p.name.startswith("worker-") for p in paths)
    for p in paths:
        recs, probs = read_jsonl(p, EVENT_REQUIRED)
        if have_workers and p.name.startswith("endpoint-"):
            recs = [r for r in recs if r.get("event") not in ENDPOINT_EVENTS_SHADOWED_BY_WORKER]
        for r in recs:
            r.setdefault("host", p.stem)
        per_file[str(p.name) if p.name not in per_file else str(p)] = recs
        problems += probs
    records = [r for recs in jsonl.drop_far_times(per_file, problems).values() for r in recs]
    return _frame(records, problems, ["t_ns", "host", "event"])


def find_fault_log(run_dir) -> Path | None:
    p = Path(run_dir) / FAULT_LOG
    return p if p.is_file() else None


def load_faults(path_or_dir) -> pd.DataFrame:
    """The fault log ({"t_ns","action","a","b",...}) as a DataFrame; empty if there is none."""
    p = Path(path_or_dir)
    if p.is_dir():
        p = find_fault_log(p)
        if p is None:
            return _frame([], [], ["t_ns", "action", "a", "b"])
    recs, probs = read_jsonl(p, FAULT_REQUIRED)
    return _frame(recs, probs, ["t_ns", "action", "a", "b"])


def events_of(df: pd.DataFrame, name: str) -> pd.DataFrame:
    """Rows of one event type with only the columns that event uses (others all-NaN dropped)."""
    sub = df[df["event"] == name]
    return sub.dropna(axis=1, how="all").reset_index(drop=True)


# ---------------------------------------------------------------- run directory layout


NOT_RUNS = ("sweeps",)      # results/ directories that hold other things than one run


def resolve_run(path, results_root=None) -> Path:
    """A run directory, or 'latest' = the most recently modified finished run under
    results_root (default results_dir()): a directory holding its summary.json (the runner writes
    it last, so a run still being written is not one), never results/sweeps."""
    if str(path) == "latest":
        root = Path(results_dir() if results_root is None else results_root)
        runs = [d for d in root.iterdir() if d.is_dir() and not d.is_symlink()
                and d.name not in NOT_RUNS] if root.is_dir() else []
        done = [d for d in runs if (d / "summary.json").is_file()]
        if not done:
            also = (f" ({len(runs)} without a summary.json: still running or cut short; name "
                    f"one to read it anyway)" if runs else "")
            raise FileNotFoundError(f"no finished run directory under {root.resolve()}{also}; "
                                    "run an experiment first (mrclab run <name>, a scenario of "
                                    "experiments/)")
        return max(done, key=lambda d: d.stat().st_mtime)
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise FileNotFoundError(f"{p} is not a run directory (a directory of one run's results)")
    if not p.is_dir():
        raise FileNotFoundError(f"run directory {p} does not exist")
    return p


def is_transport_dir(d: Path) -> bool:
    """Holds one transport's data: event logs, or captures (directly or in pcaps/)."""
    return bool(event_log_paths(d)) or any(d.glob("*.pcap")) or any(d.glob("pcaps/*.pcap"))


def transport_dirs(run_dir) -> dict[str, Path]:
    """{transport: dir}. A run has one subdirectory per transport (mrc/, roce/, tcp/); a
    transport directory itself is accepted too (named after the directory)."""
    run_dir = Path(run_dir)
    if is_transport_dir(run_dir):
        return {run_dir.name: run_dir}
    return {d.name: d for d in sorted(run_dir.iterdir()) if d.is_dir() and is_transport_dir(d)}


# summary.json fields the analysis reads, and their kinds (others are shown, not computed with)
SUMMARY_FIELDS = {"world_size": "count", "fabric": "table", "transports": "table"}


def load_summary(run_dir, problems: list | None = None) -> dict:
    """summary.json of a run or transport directory; {} if missing or unreadable (reported in
    `problems`). A field the analysis computes with that has another type is dropped and reported."""
    summary = read_json(Path(run_dir) / "summary.json", problems) or {}
    for key, kind in SUMMARY_FIELDS.items():
        if key in summary and not _kind_ok(kind, summary[key]):
            _note(problems, f"summary.json: {key} is not {_KIND_NAMES[kind]} "
                            f"(got {_short(summary[key])}), ignored")
            summary = {k: v for k, v in summary.items() if k != key}
    return summary


def load_scenario(run_dir, problems: list | None = None) -> dict:
    """The scenario copy (scenario.toml or any *.toml in the dir or its parent); {} if none.
    A copy that is not UTF-8 TOML is reported in `problems` and the next candidate tried."""
    d = Path(run_dir)
    for cand in [d / "scenario.toml", *sorted(d.glob("*.toml")), d.parent / "scenario.toml",
                 d.parent.parent / "scenario.toml"]:
        if cand.is_file():
            try:
                return tomllib.loads(cand.read_bytes().decode("utf-8"))
            except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError, RecursionError) as exc:
                _note(problems, f"{cand.name}: not readable TOML ({exc.__class__.__name__}: "
                                f"{str(exc)[:60]})")
                continue
    return {}


def run_topology(run_dir, problems: list | None = None) -> Topology | None:
    """Topology of the run's fabric from the scenario's [fabric] table (or summary's "fabric")."""
    fabric = (load_scenario(run_dir, problems).get("fabric")
              or load_summary(run_dir, problems).get("fabric"))
    if not isinstance(fabric, dict):
        for spec_json in (Path(run_dir) / "fabric" / "spec.json",
                          Path(run_dir).parent / "fabric" / "spec.json"):
            fabric = read_json(spec_json, problems)
            if fabric is not None:
                break
    if not isinstance(fabric, dict):
        return None
    try:
        return Topology(FabricSpec.from_fabric_table(fabric))
    except SpecError as exc:
        _note(problems, f"fabric description unusable: {exc}")
        return None
