"""JSON Lines, read one way: the workers', endpoints' and controller's logs.

A worker or endpoint killed mid-write leaves a cut last line, and a damaged file can hold anything;
a bad line becomes a `file:line: why` problem for the caller to report, never an exception. Pure
standard library (the run model and the runner's log tail use it without pandas).

A dilated run's files are read in the emulated world's time (model/timescale.py's rule, the
run's k from analysis/timescale.py): every reader of a run's logs gets the same times without
converting them itself.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Iterable

from analysis.timescale import time_scale_of
from model import timescale
from model.events import Event
from model.safe_read import NotRegularFile, read_regular

# A run of minutes writes logs of tens of MB; a larger one (a sparse file of GiBs, say) is not a
# run's log, and reading it whole would exhaust memory.
MAX_LOG_BYTES = 1 << 29


def parse_json(data: bytes | str):
    """json.loads, with every way a corrupt input fails as ValueError: undecodable bytes,
    bad syntax, and nesting deep enough to exhaust the parser's recursion."""
    try:
        return json.loads(data)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def parse_record(line: bytes | str) -> tuple[dict | None, str | None]:
    """(the line's JSON object, None) or (None, why it is not one)."""
    try:
        obj = parse_json(line)
    except ValueError as exc:
        return None, f"not JSON ({exc.__class__.__name__}: {str(exc)[:60]})"
    if not isinstance(obj, dict):
        return None, "not a JSON object"
    return obj, None


def log_host(path) -> str | None:
    """The host a runner's per-host log belongs to: worker-h3.jsonl, endpoint-h3.jsonl -> h3."""
    stem = Path(path).stem
    for prefix in ("worker-", "endpoint-"):
        if stem.startswith(prefix) and len(stem) > len(prefix):
            return stem[len(prefix):]
    return None


def contradiction(obj: dict, host: str | None) -> str | None:
    """Why a record contradicts itself or the log it is in, or None: another host's record in
    a host's log (a log replaced by, or spoofed as, another rank's: ranks are counted by file),
    an iteration that ends before it starts, one verified beside a count of wrong elements."""
    who = obj.get("host")
    if host is not None and who is not None and who != host:
        return f"a record of host {str(who)[:40]!r} in {host}'s log (another host's record)"
    if obj.get("event") != Event.ITERATION:
        return None
    start, end, wrong = obj.get("start_ns"), obj.get("end_ns"), obj.get("wrong")
    if isinstance(start, int) and isinstance(end, int) and end < start:
        return f"iteration {obj.get('iter')!r} ends ({end}) before it starts ({start})"
    if obj.get("verified") is True and isinstance(wrong, int) and not isinstance(wrong, bool) \
            and wrong != 0:
        return f"iteration {obj.get('iter')!r} says verified beside wrong = {wrong}"
    return None


MAX_TIME_SPREAD_S = 86_400   # a run lasts minutes: a record a day from the others is not its own


def drop_far_times(per_file: dict[str, list[dict]], problems: list[str],
                   spread_s: float = MAX_TIME_SPREAD_S) -> dict[str, list[dict]]:
    """The records again without those whose t_ns lies more than spread_s from the median t_ns
    of all of them; each dropped one is named in `problems` (the first few per file). The
    analysis puts the records on time grids, so one planted t_ns = 2**62 would otherwise ask
    for terabytes."""
    times = sorted(r["t_ns"] for recs in per_file.values() for r in recs
                   if isinstance(r.get("t_ns"), int) and not isinstance(r.get("t_ns"), bool))
    if not times:
        return per_file
    median, spread = times[len(times) // 2], int(spread_s * 1e9)
    out = {}
    for name, recs in per_file.items():
        keep, far = [], []
        for r in recs:
            t = r.get("t_ns")
            (far if isinstance(t, int) and abs(t - median) > spread else keep).append(r)
        for r in far[:3]:
            problems.append(f"{name}: {r.get('event') or 'record'} with t_ns={r['t_ns']} is "
                            f"{abs(r['t_ns'] - median) / 1e9:.3g} s from the run's median time "
                            f"(more than {spread_s:g} s): skipped")
        if len(far) > 3:
            problems.append(f"{name}: {len(far) - 3} more records that far off skipped")
        out[name] = keep
    return out


def read_jsonl(path, problems: list[str], *, check: Callable[[dict], str | None] | None = None,
               events: Iterable[str] | None = None, missing_ok: bool = True) -> list[dict]:
    """The JSON objects of one JSONL file, in order. A line that is not an object, or that
    `check` finds a problem with (a string), is skipped and noted in `problems` as
    `file:line: why`. `events` keeps only records of those event names (lines that cannot be
    one are not even parsed: logs hold hundreds of thousands of goodput samples). A missing
    file reads as empty, or is a problem when not `missing_ok`. Times come in the emulated
    world's (model/timescale.py)."""
    path = Path(path)
    wanted = None if events is None else frozenset(events)
    needles = None if wanted is None else tuple(w.encode() for w in wanted)
    out: list[dict] = []
    try:
        raw = read_regular(path, MAX_LOG_BYTES)
    except FileNotFoundError:
        if not missing_ok:
            problems.append(f"{path.name}: missing")
        return out
    except NotRegularFile as exc:
        problems.append(f"{path.name}: not read ({str(exc).split(' ', 1)[-1]})")
        return out
    except OSError as exc:
        problems.append(f"{path.name}: cannot read ({exc.strerror or exc})")
        return out
    k = time_scale_of(path.parent)
    for lineno, line in enumerate(raw.split(b"\n"), start=1):
        if not line.strip() or (needles is not None and not any(n in line for n in needles)):
            continue
        obj, why = parse_record(line)
        if obj is not None and wanted is not None and obj.get("event") not in wanted:
            continue
        if obj is not None and k != 1.0:
            obj = timescale.scale_params(obj, k, direction=timescale.BACK)
        if obj is not None and check is not None:
            why = check(obj)
        if why:
            problems.append(f"{path.name}:{lineno}: {why}")
            continue
        out.append(obj)
    return out
