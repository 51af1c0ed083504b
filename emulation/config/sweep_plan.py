"""Sweep files (TOML): a base scenario, a grid over any of its keys and a number of repeats,
expanded into one scenario text per point, each validated by the scenario loader.

    name = "random-loss-sweep"               # default: the file's stem
    description = "..."
    scenario = "../random-loss.toml"         # the base scenario, relative to this file
    repeats = 3                              # runs of every point (each a fresh fabric)
    transports = ["mrc", "roce", "tcp"]      # default: the scenario's [transport] names
    x = "faults[0].percent"                  # the figures' x axis (default: the first grid key)
    x_label = "random loss on every host link (%)"
    baseline = 0.0                           # optional: x value whose runs are the reference
                                             #   of the "slowdown" column (same transport)
    [set]                                    # fixed overrides of the base, any key
    "faults" = [{at_iteration = 1, action = "gray_loss", links = "host", percent = 0.0}]
    [grid]                                   # every combination of these values is a point
    "faults[0].percent" = [0.0, 0.1, 0.5, 1.0, 2.0]
    [short]                                  # `mrclab sweep --short`: the scenario's [short]
    repeats = 1                              #   version, and these replacements of repeats,
    grid = {"faults[0].percent" = [0.0, 1.0]}  # grid, x_values or transports; its `set`
                                             #   adds to (and overrides keys of) [set]
    [[paper]]                                # optional, one per figure of `mrclab paper`:
    claim = "MRC's slowdown stays below RoCE's"  #   what the paper says, in a sentence
    metric = "slowdown"                      #   a column of the curves (analysis/sweep_stats.py)
    expect = "lower"                         #   "lower" or "higher"
    compare = "transports"                   #   the first transport against each other one, at
    at = [0.5, 1.0, 2.0]                     #   each x of `at` (default every x); "x": in each
                                             #   series, the metric at at[1] against at at[0]
                                             #   (default the last x against the first)
    transports = ["mrc", "roce"]             #   optional: the transports the claim is about
                                             #   (default the sweep's; the first is the reference)

Keys are dotted paths into the scenario's TOML: `fabric.planes`, `mrc.qp.ev_count`,
`faults[0].percent` (the first [[faults]] entry), `collective.message_bytes`. A path must reach
an existing table (a missing last key is added, so a default can be overridden); a list index
must exist. A grid value that is not a number (a whole `faults` list, say) needs `x_values`:
the number each grid value stands for on the x axis.

Pure: no Mininet, no processes; the runner (emulation/run/sweep.py) drives the points.
"""
from __future__ import annotations

import copy
import itertools
import math
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from analysis.sweep_stats import METRICS
from emulation.config import scenario as scenario_mod
from emulation.config.scenario import ScenarioError
from model.events import TRANSPORTS
from model.safe_read import NotRegularFile, read_regular

TOP_KEYS = ("name", "description", "scenario", "repeats", "transports", "x", "x_label",
            "x_values", "baseline", "set", "grid", "short", "paper")
CLAIM_KEYS = ("claim", "metric", "expect", "compare", "at", "transports")
EXPECTS = ("lower", "higher")
COMPARES = ("transports", "x")
SHORT_KEYS = ("repeats", "grid", "x_values", "transports", "set")
_SEGMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*)((?:\[\d{1,9}\])*)")   # no scenario list is longer
MAX_SWEEP_BYTES = 1 << 20      # a sweep file is a few hundred bytes
# Every point is at least one fabric run of a minute or more per transport and repeat: a grid
# of more points is a typo (and expanding 100^6 of them would exhaust memory).
MAX_POINTS = 1000


class SweepError(ValueError):
    """A sweep file that cannot run: the message names the file, the key and what is wrong."""


@dataclass(frozen=True)
class Point:
    """One grid point: its index, the value of every grid key, and its x on the figures."""
    index: int
    values: dict
    x: float

    @property
    def label(self) -> str:
        return f"p{self.index:03d}"


@dataclass(frozen=True)
class Claim:
    """One figure of `mrclab paper`: what the paper says of `metric` and how the intervals judge
    it (analysis/paper_verdict.py)."""
    claim: str
    metric: str
    expect: str
    compare: str
    at: tuple | None = None
    transports: tuple | None = None

    def to_json(self) -> dict:
        return {"claim": self.claim, "metric": self.metric, "expect": self.expect,
                "compare": self.compare, "at": None if self.at is None else list(self.at),
                "transports": None if self.transports is None else list(self.transports)}


@dataclass
class Sweep:
    name: str
    description: str
    source: Path
    scenario_path: Path
    base_text: str
    repeats: int
    transports: list[str]
    grid: dict[str, list]
    x: str
    x_label: str
    baseline: float | None
    fixed: dict = field(default_factory=dict)
    points: list[Point] = field(default_factory=list)
    short: bool = False
    text: str = ""
    claims: list[Claim] = field(default_factory=list)

    def scenario_text(self, point: Point) -> str:
        """The point's scenario file: the base with [set] and the point's values applied."""
        data = tomllib.loads(self.base_text)
        for key, value in {**self.fixed, **point.values}.items():
            apply_override(data, key, value)
        return dumps(data)


# ---------------------------------------------------------------- dotted keys


def parse_key(key: str) -> list[str | int]:
    """'faults[0].percent' -> ['faults', 0, 'percent']; raises SweepError on bad syntax."""
    if not isinstance(key, str) or not key:
        raise SweepError(f"key {key!r}: expected a dotted key such as 'mrc.qp.ev_count'")
    path: list[str | int] = []
    for part in key.split("."):
        m = _SEGMENT.fullmatch(part)
        if not m:
            raise SweepError(f"key {key!r}: {part!r} is not a key name with optional [index]")
        path.append(m.group(1))
        path += [int(i) for i in re.findall(r"\[(\d+)\]", m.group(2))]
    return path


def apply_override(data: dict, key: str, value) -> None:
    """Set `key` (dotted) in the parsed scenario `data` to `value`. Tables on the way that the
    base leaves out are created (a scenario may omit [mrc.qp]); a list index must exist."""
    path = parse_key(key)
    node = data
    for i, step in enumerate(path[:-1]):
        where = _where(path[:i + 1])
        nxt = path[i + 1]
        if isinstance(step, int):
            if not isinstance(node, list) or step >= len(node):
                size = len(node) if isinstance(node, list) else 0
                raise SweepError(f"key {key!r}: {where} does not exist (the list has {size} "
                                 f"entries)")
            node = node[step]
            continue
        if not isinstance(node, dict):
            raise SweepError(f"key {key!r}: {_where(path[:i])} is not a table")
        if step not in node:
            if isinstance(nxt, int):
                raise SweepError(f"key {key!r}: the scenario has no list {where}")
            node[step] = {}
        node = node[step]
    last = path[-1]
    if isinstance(last, int):
        if not isinstance(node, list) or last >= len(node):
            raise SweepError(f"key {key!r}: {_where(path)} does not exist")
        node[last] = copy.deepcopy(value)
    elif not isinstance(node, dict):
        raise SweepError(f"key {key!r}: {_where(path[:-1])} is not a table")
    else:
        node[last] = copy.deepcopy(value)


def _where(path) -> str:
    out = ""
    for step in path:
        out += f"[{step}]" if isinstance(step, int) else (f".{step}" if out else step)
    return out or "the scenario"


# ---------------------------------------------------------------- TOML out


_BARE = re.compile(r"[A-Za-z0-9_-]+")


def _key(k: str) -> str:
    return k if _BARE.fullmatch(k) else _string(k)


def _string(s: str) -> str:
    out = s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return '"' + "".join(c if ord(c) >= 0x20 and c != "\x7f" else f"\\u{ord(c):04x}"
                         for c in out) + '"'


def _value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            return "nan" if v != v else ("inf" if v > 0 else "-inf")
        return repr(v)
    if isinstance(v, str):
        return _string(v)
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_key(k)} = {_value(x)}" for k, x in v.items()) + "}"
    raise SweepError(f"cannot write {type(v).__name__} value {v!r} as TOML")


def dumps(data: dict) -> str:
    """TOML text of parsed TOML data (tables, arrays of tables, scalars, inline values):
    enough for scenario files, which tomllib reads back to the same data."""
    lines: list[str] = []

    def table(node: dict, prefix: str) -> None:
        subtables, arrays = [], []
        for k, v in node.items():
            if isinstance(v, dict):
                subtables.append((k, v))
            elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
                arrays.append((k, v))
            else:
                lines.append(f"{_key(k)} = {_value(v)}")
        for k, v in subtables:
            name = f"{prefix}.{_key(k)}" if prefix else _key(k)
            lines.extend(["", f"[{name}]"])
            table(v, name)
        for k, v in arrays:
            name = f"{prefix}.{_key(k)}" if prefix else _key(k)
            for entry in v:
                lines.extend(["", f"[[{name}]]"])
                table(entry, name)

    table(data, "")
    return "\n".join(lines).lstrip("\n") + "\n"


# ---------------------------------------------------------------- sweep files


def expand(grid: dict[str, list]) -> list[dict]:
    """Every combination of the grid's values, the first key varying slowest."""
    keys = list(grid)
    return [dict(zip(keys, combo)) for combo in itertools.product(*(grid[k] for k in keys))]


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def parse(text: str, source: Path, short: bool = False) -> Sweep:
    """The sweep of `text` (its file: `source`), every point's scenario validated."""
    where = str(source)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SweepError(f"{where}: not valid TOML: {exc}") from None
    unknown = [k for k in data if k not in TOP_KEYS]
    if unknown:
        raise SweepError(f"{where}: unknown key(s) {', '.join(map(repr, unknown))}; known: "
                         f"{', '.join(TOP_KEYS)}")
    if short:
        extra = data.get("short")
        if not isinstance(extra, dict):
            raise SweepError(f"{where}: has no [short] table, so there is no short version")
        bad = [k for k in extra if k not in SHORT_KEYS]
        if bad:
            raise SweepError(f"{where}: [short] key(s) {', '.join(map(repr, bad))} unknown; "
                             f"known: {', '.join(SHORT_KEYS)}")
        merged_set = {**data.get("set", {}), **extra.get("set", {})} if isinstance(
            extra.get("set", {}), dict) and isinstance(data.get("set", {}), dict) else None
        data = {**data, **extra}
        if merged_set is None:
            raise SweepError(f"{where}: [set] and [short.set] must be tables of key = value")
        if merged_set:
            data["set"] = merged_set
    if "scenario" not in data or not isinstance(data["scenario"], str):
        raise SweepError(f"{where}: 'scenario' (the base scenario file, relative to the sweep "
                         f"file) is required")
    for key in ("name", "description", "x_label"):
        if key in data and not isinstance(data[key], str):
            raise SweepError(f"{where}: {key} must be a string, got {data[key]!r}")
    scenario_path = (Path(source).parent / data["scenario"]).resolve()
    base_text = _read(scenario_path, scenario_mod.MAX_SCENARIO_BYTES,
                      f"{where}: cannot read the base scenario")
    try:
        tomllib.loads(base_text)
    except (tomllib.TOMLDecodeError, RecursionError) as exc:
        why = "nested too deeply" if isinstance(exc, RecursionError) else exc
        raise SweepError(f"{where}: the base scenario {scenario_path} is not valid TOML: "
                         f"{why}") from None
    repeats = data.get("repeats", 1)
    if not isinstance(repeats, int) or isinstance(repeats, bool) or not 1 <= repeats <= 100:
        raise SweepError(f"{where}: repeats must be an integer in 1..100, got {repeats!r}")
    grid = data.get("grid")
    if not isinstance(grid, dict) or not grid:
        raise SweepError(f"{where}: [grid] must map at least one key to a list of values")
    for key, values in grid.items():
        parse_key(key)
        if not isinstance(values, list) or not values:
            raise SweepError(f"{where}: grid key {key!r} must have a non-empty list of values, "
                             f"got {values!r}")
    size = math.prod(len(v) for v in grid.values())
    if size > MAX_POINTS:
        raise SweepError(f"{where}: the grid has {size} points; at most {MAX_POINTS} (each is "
                         f"a fabric run per transport and repeat)")
    fixed = data.get("set", {})
    if not isinstance(fixed, dict):
        raise SweepError(f"{where}: [set] must be a table of key = value")
    x = data.get("x", next(iter(grid)))
    if x not in grid:
        raise SweepError(f"{where}: x = {x!r} is not a grid key; grid keys: {', '.join(grid)}")
    x_values = data.get("x_values")
    if x_values is not None:
        if (not isinstance(x_values, list) or len(x_values) != len(grid[x])
                or not all(_is_number(v) for v in x_values)):
            raise SweepError(f"{where}: x_values must be {len(grid[x])} numbers, one per value "
                             f"of {x!r}, got {x_values!r}")
    elif not all(_is_number(v) for v in grid[x]):
        raise SweepError(f"{where}: the values of {x!r} are not all numbers: give x_values, "
                         f"the number each stands for on the x axis")
    axis = x_values if x_values is not None else grid[x]
    if not all(math.isfinite(v) for v in axis):
        raise SweepError(f"{where}: the x values ({'x_values' if x_values is not None else x!r})"
                         f" must be finite numbers, got {axis!r}")
    baseline = data.get("baseline")
    if baseline is not None and (not _is_number(baseline) or baseline not in axis):
        raise SweepError(f"{where}: baseline must be one of the x values "
                         f"({', '.join(map(repr, axis))}), got {baseline!r}")
    sweep = Sweep(name=data.get("name", Path(source).stem), description=data.get("description", ""),
                  source=Path(source), scenario_path=scenario_path, base_text=base_text,
                  repeats=repeats, transports=[], grid=grid, x=x,
                  x_label=data.get("x_label", x), baseline=baseline, fixed=fixed, short=short,
                  text=text)
    if not scenario_mod.NAME_PATTERN.fullmatch(sweep.name):
        raise SweepError(f"{where}: name {sweep.name!r}: use letters, digits, '-', '_', '.'")
    xs = dict(zip(map(_freeze, grid[x]), x_values if x_values is not None else grid[x]))
    sweep.points = [Point(i, values, float(xs[_freeze(values[x])]))
                    for i, values in enumerate(expand(grid))]
    scenarios = [_validated(sweep, p, where) for p in sweep.points]
    names = data.get("transports", scenarios[0].transports)
    if (not isinstance(names, list) or not names or len(set(names)) != len(names)
            or not all(n in TRANSPORTS for n in names)):
        raise SweepError(f"{where}: transports must list each of {', '.join(TRANSPORTS)} at most "
                         f"once, got {names!r}")
    sweep.transports = list(names)
    sweep.claims = parse_claims(data.get("paper", []), where, sweep, axis)
    return sweep


def parse_claims(entries, where: str, sweep: Sweep, axis: list) -> list[Claim]:
    """The [[paper]] entries. The short version keeps the full version's claims, so an `at`
    outside its grid or a comparison of transports it does not run is allowed there (the page
    then says the intervals cannot tell)."""
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise SweepError(f"{where}: paper must be [[paper]] tables (claim, metric, expect, ...)")
    out = []
    for i, e in enumerate(entries):
        at = f"{where}: [[paper]] {i + 1}"
        unknown = [k for k in e if k not in CLAIM_KEYS]
        if unknown:
            raise SweepError(f"{at}: unknown key(s) {', '.join(map(repr, unknown))}; known: "
                             f"{', '.join(CLAIM_KEYS)}")
        if not isinstance(e.get("claim"), str) or not e["claim"].strip():
            raise SweepError(f"{at}: claim must be a sentence (what the paper says)")
        checks = (("metric", METRICS), ("expect", EXPECTS), ("compare", COMPARES))
        for key, allowed in checks:
            if e.get(key) not in allowed:
                raise SweepError(f"{at}: {key} must be one of {', '.join(allowed)}, got "
                                 f"{e.get(key)!r}")
        xs = e.get("at")
        if xs is not None:
            if not isinstance(xs, list) or not xs or not all(_is_number(v) for v in xs):
                raise SweepError(f"{at}: at must be a list of x values, got {xs!r}")
            if e["compare"] == "x" and len(xs) != 2:
                raise SweepError(f"{at}: with compare = \"x\", at names two x values (from, to), "
                                 f"got {xs!r}")
            missing = [v for v in xs if v not in axis]
            if missing and not sweep.short:
                raise SweepError(f"{at}: at {missing!r} not among the x values "
                                 f"({', '.join(map(repr, axis))})")
        names = e.get("transports")
        if names is not None and (not isinstance(names, list) or not names
                                  or not all(n in TRANSPORTS for n in names)):
            raise SweepError(f"{at}: transports must list some of {', '.join(TRANSPORTS)}, got "
                             f"{names!r}")
        if names is not None and not sweep.short and not set(names) <= set(sweep.transports):
            raise SweepError(f"{at}: transports {names!r} are not all run by the sweep "
                             f"({', '.join(sweep.transports)})")
        if (e["compare"] == "transports" and len(names or sweep.transports) < 2
                and not sweep.short):
            raise SweepError(f"{at}: compare = \"transports\" needs at least two transports")
        out.append(Claim(e["claim"].strip(), e["metric"], e["expect"], e["compare"],
                         None if xs is None else tuple(xs),
                         None if names is None else tuple(names)))
    return out


def _freeze(v):
    return repr(v)


def _validated(sweep: Sweep, point: Point, where: str):
    text = sweep.scenario_text(point)
    try:
        return scenario_mod.parse(text, source=f"{sweep.scenario_path.name} at {point.label} "
                                  f"({_describe(point.values)})",
                                  default_name=sweep.scenario_path.stem, short=sweep.short)
    except ScenarioError as exc:
        raise SweepError(f"{where}: point {point.label} makes an invalid scenario: {exc}") from None


def _describe(values: dict) -> str:
    return ", ".join(f"{k} = {v!r}" for k, v in values.items())


def _read(path: Path, max_bytes: int, what: str) -> str:
    """The UTF-8 text of a regular file of at most max_bytes (a FIFO would block, /dev/zero
    never end); SweepError naming `what` otherwise."""
    try:
        return read_regular(path, max_bytes).decode("utf-8")
    except NotRegularFile as exc:
        raise SweepError(f"{what}: {exc}") from None
    except OSError as exc:
        raise SweepError(f"{what} {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise SweepError(f"{what} {path}: not UTF-8 text") from None


def load(path: str | Path, short: bool = False) -> Sweep:
    path = Path(path)
    return parse(_read(path, MAX_SWEEP_BYTES, "cannot read sweep file"), path, short=short)
