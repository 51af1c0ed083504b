"""Scenario files (TOML): what fabric, which transports, which collective, which faults when.

Validated completely before anything starts, so a typo fails in a second with the key and line
instead of after a minute of fabric start-up. Schema (every key optional unless marked):

    name = "demo"                       # default: the file's stem
    description = "..."

    [fabric]                            # emulation.topology.FabricSpec fields
    planes = 2                          # groups, spines, hosts_per_group, host_link_mbit,
    routing = "srv6"                    #   fabric_link_mbit; routing used by mrc: srv6|ecmp
    switch_buffer_kb = 64               # drop-tail buffer of every switch egress port, KiB
                                        #   (omit: HTB's deep default, ~1000 packets;
                                        #   emulation/switchqueue.py)

    [transport]
    names = ["mrc", "roce", "tcp"]      # what `--transport all` runs (and the default)
    tcp_reconvergence_s = 2.0           # ecmp dynamic reconvergence delay for tcp
    roce_reconvergence_s = 2.0          # for roce; omit = static ecmp (no reconvergence)
    tcp_port = 47000

    [collective]
    kind = "allreduce"                  # allreduce|reduce_scatter|allgather|alltoall|sendrecv|incast
    message_bytes = 1048576             # per rank buffer, multiple of 4
    iterations = 30                     # timed iterations (after warmup)
    warmup = 2
    qps_per_peer = 2
    timeout_s = 60                      # per wait(): a stuck transport fails the worker
    incast_target = "h0"                # incast only
    victim = ["h1", "h2"]               # incast only: extra flow src -> dst

    [options]
    trimming = true                     # in-fabric packet trimming (mrc)
    capture = true                      # tcpdump -s 128 on every host port
    goodput_interval_ms = 10

    [[faults]]                          # any number, applied in time order
    at_s = 2.0                          # seconds after the timed iterations start, or
    at_iteration = 10                   # when any rank starts timed iteration 10, or
    after_s = 3.0                       # this long after the previous entry (file order) was
                                        #   applied: a repair that comes even if the fault
                                        #   stalled the collective (a baseline stuck on a dead
                                        #   path still sees the link come back)
    action = "link_down"                # controller fault API action
    a = "t0p0g0"                        # link ends (or a = switch for blackhole), or
    b = "t1p0s0"
    links = "host"                      # instead of a/b: every "host", "fabric" or "all" link,
                                        #   or a switch's name: all its links (a switch down)
    # action parameters (percent, direction, period_s, count, fraction, rate_mbit)

    [mrc]                               # MRC/RoCE endpoint settings, passed to every worker
    ring_bytes = 4194304                # receive ring per QP (traffic/mrc_comm.py)
    fragment_bytes = 262144             # WRITE-with-IMM fragment, <= ring_bytes / 2
    linger_s = 0.3                      # keep answering peers this long after the last iteration
    base_rtt_ns = 2000000               # fixed base RTT (omit: measured with probes)
    connect_timeout_s = 60
    [mrc.endpoint]                      # traffic.endpoint_support.EndpointConfig overrides
    rto_rtts = 25.0                     #   (host, fabric, routing, event_log: set by the runner)
    [mrc.qp]                            # traffic.reliability.MRCConfig overrides
    ev_count = 32

    [short]                             # `mrclab run FILE --short`: the test-sized version
    iterations = 12                     # any [collective] key (message_bytes, warmup, timeout_s..)
    message_bytes = 262144
    capture = false                     # any [options] key
    time_scale = 0.5                    # multiplies every fault's at_s, after_s, a flap's period_s;
                                        # at_iteration scales with short/full iterations

The short version exists so tests can run every shipped scenario in seconds with the same fault
schedule in miniature; parse() validates both versions whenever a [short] table is present, so a
short version that would not run is caught by --validate-only, too.
"""
from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path

from emulation.switchqueue import MAX_BUFFER_BYTES, MIN_BUFFER_BYTES
from emulation.topology import FabricSpec, SpecError, Topology

TRANSPORTS = ("mrc", "roce", "tcp")
COLLECTIVES = ("allreduce", "reduce_scatter", "allgather", "alltoall", "sendrecv", "incast")
ROUTINGS = ("srv6", "ecmp")
LINK_SELECTORS = ("host", "fabric", "all")
FAULT_TIMING_KEYS = ("at_s", "at_iteration", "after_s", "links")
MRC_KEYS = ("ring_bytes", "fragment_bytes", "linger_s", "base_rtt_ns", "connect_timeout_s",
            "endpoint", "qp")
# EndpointConfig fields the runner/worker fill in per host; a scenario must not set them
MRC_ENDPOINT_RESERVED = ("host", "fabric", "routing", "event_log", "control_socket")
OPTION_KEYS = ("trimming", "capture", "goodput_interval_ms")
SHORT_EXTRA_KEYS = ("time_scale",)


class ScenarioError(ValueError):
    """A scenario that cannot run; the message names the file, line and key."""


@dataclass
class CollectiveSpec:
    kind: str = "allreduce"
    message_bytes: int = 1 << 20
    iterations: int = 20
    warmup: int = 2
    qps_per_peer: int = 2
    timeout_s: float = 60.0
    incast_target: str | None = None
    victim: list | None = None


@dataclass
class FaultEntry:
    """One scheduled fault (a `links` selector is already expanded into one command per link)."""
    at_s: float | None
    at_iteration: int | None
    commands: list[dict]               # POST /fault bodies, validated
    line: int | None = None
    after_s: float | None = None       # seconds after the previous entry (file order) applied

    def when(self) -> str:
        if self.at_s is not None:
            return f"at_s={self.at_s}"
        if self.after_s is not None:
            return f"after_s={self.after_s}"
        return f"at_iteration={self.at_iteration}"


@dataclass
class Scenario:
    name: str
    description: str
    spec: FabricSpec
    routing: str
    transports: list[str]
    tcp_reconvergence_s: float | None
    roce_reconvergence_s: float | None
    tcp_port: int
    collective: CollectiveSpec
    trimming: bool
    capture: bool
    goodput_interval_ms: float
    faults: list[FaultEntry] = field(default_factory=list)
    switch_buffer_kb: int | None = None        # None: the deep default queue
    path: Path | None = None
    text: str = ""
    mrc: dict = field(default_factory=dict)    # the worker config's "mrc" table (validated)
    short: bool = False                        # the [short] overrides are applied
    has_short: bool = False                    # the file has a [short] table

    @property
    def topology(self) -> Topology:
        return Topology(self.spec)

    def routing_for(self, transport: str) -> tuple[str, float | None]:
        """(routing mode, dynamic reconvergence delay) the fabric runs with for a transport."""
        if transport == "mrc":
            return self.routing, None
        if transport == "roce":
            return "ecmp", self.roce_reconvergence_s
        if transport == "tcp":
            return "ecmp", self.tcp_reconvergence_s
        raise ScenarioError(f"unknown transport {transport!r}; known: {', '.join(TRANSPORTS)}")

    def trimming_for(self, transport: str) -> dict | None:
        """What the fabric's switch ports do for a transport when [options] trimming = true
        (None when false: plain HTB, no BPF program). Queue-based ECN marking for every
        transport; trimming only for MRC, whose receivers NACK trimmed packets: to the RoCE
        baseline a trimmed packet is just a loss, and TCP is never trimmed (not UDP 4791)."""
        if transport not in TRANSPORTS:
            raise ScenarioError(f"unknown transport {transport!r}; known: {', '.join(TRANSPORTS)}")
        if not self.trimming:
            return None
        return {"mark": True, "trim": transport == "mrc"}


# ---------------------------------------------------------------- locating keys in the text


class _Locator:
    """Line numbers of tables and keys (tomllib gives values, not positions)."""

    def __init__(self, text: str):
        self.lines = text.splitlines()

    def table(self, name: str, occurrence: int = 0) -> int | None:
        pattern = re.compile(r"^\s*\[\[?\s*" + re.escape(name) + r"\s*\]\]?\s*(#.*)?$")
        seen = 0
        for i, line in enumerate(self.lines):
            if pattern.match(line):
                if seen == occurrence:
                    return i + 1
                seen += 1
        return None

    def key(self, table: str | None, key: str, occurrence: int = 0) -> int | None:
        start = 0
        if table:
            line = self.table(table, occurrence)
            if line is None:
                return None
            start = line
        pattern = re.compile(r"^\s*" + re.escape(key) + r"\s*=")
        for i in range(start, len(self.lines)):
            text = self.lines[i]
            if re.match(r"^\s*\[", text):
                break
            if pattern.match(text):
                return i + 1
        return start or None


class _Checker:
    def __init__(self, source: str, text: str):
        self.source = source
        self.loc = _Locator(text)

    def fail(self, where: str, message: str, line: int | None) -> None:
        at = f"{self.source}:{line}" if line else self.source
        raise ScenarioError(f"{at}: {where}: {message}")

    def table(self, data: dict, name: str, known: tuple) -> dict:
        value = data.get(name, {})
        if not isinstance(value, dict):
            self.fail(name, f"must be a table ([{name}]), got {type(value).__name__}",
                      self.loc.key(None, name))
        unknown = sorted(set(value) - set(known))
        if unknown:
            self.fail(f"[{name}] {unknown[0]}", f"unknown key; known keys: {', '.join(known)}",
                      self.loc.key(name, unknown[0]))
        return value

    def get(self, tbl: dict, table: str, key: str, kind, default, *, lo=None, hi=None,
            choices=None, occurrence: int = 0, display: str | None = None):
        if key not in tbl:
            return default
        value = tbl[key]
        where = display or f"[{table}] {key}"
        line = self.loc.key(table, key, occurrence)
        if kind is float:
            ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
            value = float(value) if ok else value
        elif kind is int:
            ok = isinstance(value, int) and not isinstance(value, bool)
        else:
            ok = isinstance(value, kind)
        if not ok:
            type_name = {float: "a number", int: "an integer", bool: "true or false",
                         str: "a string", list: "a list"}.get(kind, str(kind))
            self.fail(where, f"must be {type_name}, got {value!r}", line)
        if choices is not None and value not in choices:
            self.fail(where, f"must be one of {', '.join(map(str, choices))}, got {value!r}", line)
        if lo is not None and value < lo or hi is not None and value > hi:
            self.fail(where, f"must be between {lo} and {hi}, got {value!r}", line)
        return value


# ---------------------------------------------------------------- loading


def load(path: str | Path, short: bool = False) -> Scenario:
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ScenarioError(f"cannot read scenario {path}: {exc.strerror}") from None
    return parse(text, source=str(path), default_name=path.stem, path=path, short=short)


def parse(text: str, source: str = "<scenario>", default_name: str = "scenario",
          path: Path | None = None, short: bool = False) -> Scenario:
    """The scenario of `text`; with short=True its [short] version (an error if it has none).
    Both versions are validated whenever the file has a [short] table."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"{source}: not valid TOML: {exc}") from None
    full = _build(data, _Checker(source, text), default_name, path, text)
    if "short" not in data:
        if short:
            raise ScenarioError(f"{source}: has no [short] table, so there is no short version "
                                f"(add one: see emulation/scenario.py)")
        return full
    ck = _Checker(source, text)
    short_data = _apply_short(data, ck, full)
    try:
        small = _build(short_data, _Checker(source, text), default_name, path, text)
    except ScenarioError as exc:
        raise ScenarioError(f"{exc} (in the short version: [short] overrides applied)") from None
    small.short = True
    small.has_short = full.has_short = True
    return small if short else full


def _apply_short(data: dict, ck: "_Checker", full: Scenario) -> dict:
    """The raw TOML data of the short version: [short] keys override [collective]/[options];
    time_scale shrinks the fault schedule (at_s, after_s, flap period_s), at_iteration scales with the
    iteration count so a fault still lands at the same fraction of the run."""
    known = tuple(CollectiveSpec.__dataclass_fields__) + OPTION_KEYS + SHORT_EXTRA_KEYS
    sh = ck.table(data, "short", known)
    scale = ck.get(sh, "short", "time_scale", float, 1.0, lo=0.01, hi=1.0)
    out = {k: v for k, v in data.items() if k != "short"}
    coll = dict(data.get("collective", {}))
    opts = dict(data.get("options", {}))
    for key, value in sh.items():
        if key in CollectiveSpec.__dataclass_fields__:
            coll[key] = value
        elif key in OPTION_KEYS:
            opts[key] = value
    out["collective"], out["options"] = coll, opts
    short_iters = coll.get("iterations", full.collective.iterations)
    ratio = short_iters / full.collective.iterations if isinstance(short_iters, int) else 1.0
    faults = []
    for entry in data.get("faults", []):
        entry = dict(entry)
        for key in ("at_s", "after_s"):
            if isinstance(entry.get(key), (int, float)) and not isinstance(entry[key], bool):
                entry[key] = entry[key] * scale
        if isinstance(entry.get("at_iteration"), int) and isinstance(short_iters, int):
            entry["at_iteration"] = min(max(0, round(entry["at_iteration"] * ratio)),
                                        max(0, short_iters - 1))
        if isinstance(entry.get("period_s"), (int, float)) and not isinstance(entry["period_s"], bool):
            entry["period_s"] = entry["period_s"] * scale
        faults.append(entry)
    if "faults" in data:
        out["faults"] = faults
    return out


def _build(data: dict, ck: "_Checker", default_name: str, path: Path | None,
           text: str) -> Scenario:
    top_known = ("name", "description", "fabric", "transport", "collective", "options", "faults",
                 "mrc", "short")
    unknown = sorted(set(data) - set(top_known))
    if unknown:
        ck.fail(unknown[0], f"unknown top-level key; known: {', '.join(top_known)}",
                ck.loc.key(None, unknown[0]) or ck.loc.table(unknown[0]))
    name = ck.get(data, "", "name", str, default_name, display="name")
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
        ck.fail("name", f"use letters, digits, '-', '_' or '.', got {name!r}", ck.loc.key(None, "name"))
    description = ck.get(data, "", "description", str, "", display="description")

    # fabric
    spec_keys = tuple(FabricSpec.__dataclass_fields__)
    fab = ck.table(data, "fabric", spec_keys + ("routing", "switch_buffer_kb"))
    routing = ck.get(fab, "fabric", "routing", str, "srv6", choices=ROUTINGS)
    buffer_kb = ck.get(fab, "fabric", "switch_buffer_kb", int, None,
                       lo=-(-MIN_BUFFER_BYTES // 1024), hi=MAX_BUFFER_BYTES // 1024)
    spec_args = {k: v for k, v in fab.items() if k not in ("routing", "switch_buffer_kb")}
    try:
        spec = FabricSpec.from_dict(spec_args)
    except SpecError as exc:
        bad = next((k for k in spec_args if str(exc).startswith(k)), None)
        ck.fail(f"[fabric] {bad}" if bad else "[fabric]", str(exc),
                ck.loc.key("fabric", bad) if bad else ck.loc.table("fabric"))
    topo = Topology(spec)

    # transport
    tr = ck.table(data, "transport", ("names", "tcp_reconvergence_s", "roce_reconvergence_s",
                                      "tcp_port"))
    names = ck.get(tr, "transport", "names", list, list(TRANSPORTS))
    for n in names:
        if n not in TRANSPORTS:
            ck.fail("[transport] names", f"unknown transport {n!r}; known: {', '.join(TRANSPORTS)}",
                    ck.loc.key("transport", "names"))
    if not names or len(set(names)) != len(names):
        ck.fail("[transport] names", "must list each transport once, at least one",
                ck.loc.key("transport", "names"))
    tcp_rec = ck.get(tr, "transport", "tcp_reconvergence_s", float, 2.0, lo=0.0, hi=600.0)
    roce_rec = ck.get(tr, "transport", "roce_reconvergence_s", float, None, lo=0.0, hi=600.0)
    tcp_port = ck.get(tr, "transport", "tcp_port", int, 47000, lo=1024, hi=65535)

    # collective
    co = ck.table(data, "collective", tuple(CollectiveSpec.__dataclass_fields__))
    coll = CollectiveSpec(
        kind=ck.get(co, "collective", "kind", str, "allreduce", choices=COLLECTIVES),
        message_bytes=ck.get(co, "collective", "message_bytes", int, 1 << 20, lo=4, hi=1 << 30),
        iterations=ck.get(co, "collective", "iterations", int, 20, lo=1, hi=100000),
        warmup=ck.get(co, "collective", "warmup", int, 2, lo=0, hi=1000),
        qps_per_peer=ck.get(co, "collective", "qps_per_peer", int, 2, lo=1, hi=64),
        timeout_s=ck.get(co, "collective", "timeout_s", float, 60.0, lo=0.1, hi=3600.0),
        incast_target=ck.get(co, "collective", "incast_target", str, None),
        victim=ck.get(co, "collective", "victim", list, None),
    )
    if coll.message_bytes % 4:
        ck.fail("[collective] message_bytes", f"must be a multiple of 4 (float32), got "
                f"{coll.message_bytes}", ck.loc.key("collective", "message_bytes"))
    hosts = [h.name for h in topo.hosts]
    if coll.kind == "incast":
        coll.incast_target = coll.incast_target or hosts[0]
        if coll.incast_target not in hosts:
            ck.fail("[collective] incast_target", f"no host {coll.incast_target!r}; hosts are "
                    f"{', '.join(hosts)}", ck.loc.key("collective", "incast_target"))
        if coll.victim is not None:
            v = coll.victim
            line = ck.loc.key("collective", "victim")
            if len(v) != 2 or any(x not in hosts for x in v) or v[0] == v[1]:
                ck.fail("[collective] victim", f"must be [src, dst], two different hosts of "
                        f"{', '.join(hosts)}, got {v!r}", line)
            if v[1] == coll.incast_target:
                ck.fail("[collective] victim", "the victim flow's destination must not be the "
                        "incast target (it should share only part of the path)", line)
    else:
        for key in ("incast_target", "victim"):
            if getattr(coll, key) is not None:
                ck.fail(f"[collective] {key}", f"only used by kind = \"incast\"",
                        ck.loc.key("collective", key))

    # options
    op = ck.table(data, "options", OPTION_KEYS)
    trimming = ck.get(op, "options", "trimming", bool, True)
    capture = ck.get(op, "options", "capture", bool, True)
    goodput_ms = ck.get(op, "options", "goodput_interval_ms", float, 10.0, lo=1.0, hi=10000.0)

    mrc = _parse_mrc(data, ck, spec)
    faults = _parse_faults(data.get("faults", []), ck, topo, coll)
    return Scenario(name=name, description=description, spec=spec, routing=routing,
                    transports=names, tcp_reconvergence_s=tcp_rec, roce_reconvergence_s=roce_rec,
                    tcp_port=tcp_port, collective=coll, trimming=trimming, capture=capture,
                    goodput_interval_ms=goodput_ms, faults=faults, path=path, text=text, mrc=mrc,
                    switch_buffer_kb=buffer_kb)


def _parse_mrc(data: dict, ck: "_Checker", spec: FabricSpec) -> dict:
    """[mrc] -> the worker config's "mrc" table (read by traffic/mrc_comm.py create()).
    The endpoint/qp sub-tables are checked by building the real config objects, so their rules
    (owned by traffic/endpoint_support.py and traffic/reliability.py) apply unchanged."""
    mr = ck.table(data, "mrc", MRC_KEYS)
    out: dict = {}
    for key, kind, lo, hi in (("ring_bytes", int, 4096, 1 << 30),
                              ("fragment_bytes", int, 64, 1 << 29),
                              ("linger_s", float, 0.0, 60.0),
                              ("base_rtt_ns", int, 1, 10**10),
                              ("connect_timeout_s", float, 0.1, 3600.0)):
        value = ck.get(mr, "mrc", key, kind, None, lo=lo, hi=hi)
        if value is not None:
            out[key] = value
    ring = out.get("ring_bytes", 4 << 20)
    frag = out.get("fragment_bytes", 256 << 10)
    if frag > ring // 2:
        ck.fail("[mrc] fragment_bytes", f"must be at most ring_bytes / 2 = {ring // 2}, got {frag}",
                ck.loc.key("mrc", "fragment_bytes"))
    from traffic.endpoint_support import ConfigError, EndpointConfig
    from traffic.reliability import MRCConfig
    endpoint = _sub_table(mr, ck, "endpoint",
                          tuple(f.name for f in fields(EndpointConfig)
                                if f.name not in MRC_ENDPOINT_RESERVED))
    qp = _sub_table(mr, ck, "qp", tuple(f.name for f in fields(MRCConfig)))
    if endpoint is not None:
        try:
            EndpointConfig.from_dict({"host": 0, "fabric": spec.to_dict(), **endpoint})
        except (ConfigError, TypeError, ValueError) as exc:
            ck.fail("[mrc.endpoint]", str(exc), ck.loc.table("mrc.endpoint"))
        out["endpoint"] = endpoint
    if qp is not None:
        try:
            MRCConfig(**qp)
        except (TypeError, ValueError) as exc:
            ck.fail("[mrc.qp]", str(exc), ck.loc.table("mrc.qp"))
        out["qp"] = qp
    return out


def _sub_table(parent: dict, ck: "_Checker", name: str, known: tuple) -> dict | None:
    if name not in parent:
        return None
    value = parent[name]
    table = f"mrc.{name}"
    if not isinstance(value, dict):
        ck.fail(f"[mrc] {name}", f"must be a table ([{table}]), got {value!r}",
                ck.loc.key("mrc", name))
    unknown = sorted(set(value) - set(known))
    if unknown:
        ck.fail(f"[{table}] {unknown[0]}", f"unknown key; known keys: {', '.join(known)}",
                ck.loc.key(table, unknown[0]))
    return dict(value)


def _fault_validator():
    """controller.faults.validate(cmd, topo) if that module is there (it owns the rules)."""
    try:
        from controller import faults
    except ImportError:
        return None
    return getattr(faults, "validate", None)


def _parse_faults(entries, ck: _Checker, topo: Topology, coll: CollectiveSpec) -> list[FaultEntry]:
    if not isinstance(entries, list):
        ck.fail("faults", "must be an array of tables ([[faults]])", ck.loc.key(None, "faults"))
    validate = _fault_validator()
    out = []
    for i, entry in enumerate(entries):
        line = ck.loc.table("faults", i)
        where = f"[[faults]] #{i + 1}"
        if not isinstance(entry, dict):
            ck.fail(where, "must be a table", line)

        def key_line(key):
            return ck.loc.key("faults", key, i) or line

        timing = [k for k in ("at_s", "at_iteration", "after_s") if k in entry]
        if len(timing) != 1:
            ck.fail(where, "needs exactly one of at_s, at_iteration or after_s", line)
        at_s = at_it = after_s = None
        if timing == ["at_s"]:
            at_s = ck.get(entry, "faults", "at_s", float, None, lo=0.0, hi=86400.0,
                          occurrence=i, display=f"{where} at_s")
        elif timing == ["after_s"]:
            if i == 0:
                ck.fail(f"{where} after_s", "the first entry has no previous one to follow; use "
                        "at_s or at_iteration", key_line("after_s"))
            after_s = ck.get(entry, "faults", "after_s", float, None, lo=0.0, hi=86400.0,
                             occurrence=i, display=f"{where} after_s")
        else:
            at_it = ck.get(entry, "faults", "at_iteration", int, None, lo=0,
                           hi=coll.iterations - 1, occurrence=i, display=f"{where} at_iteration")
        action = entry.get("action")
        if not isinstance(action, str):
            ck.fail(where, f"needs action = \"...\" (a string), got {action!r}", key_line("action"))
        body = {k: v for k, v in entry.items() if k not in FAULT_TIMING_KEYS}
        if "links" in entry:
            selector = entry["links"]
            switches = set(topo.switches)
            if selector not in LINK_SELECTORS and selector not in switches:
                ck.fail(f"{where} links", f"must be one of {', '.join(LINK_SELECTORS)} or a switch "
                        f"of this fabric (e.g. {min(switches)}), got {selector!r}", key_line("links"))
            if "a" in entry or "b" in entry:
                ck.fail(where, "give either links = ... or a/b, not both", key_line("links"))
            if selector in switches:         # every link of one switch: the switch goes down
                targets = [lk for lk in topo.links if selector in (lk.a, lk.b)]
            else:
                targets = [lk for lk in topo.links if selector == "all" or lk.kind == selector]
            commands = [dict(body, a=lk.a, b=lk.b) for lk in targets]
        else:
            commands = [body]
        checked = []
        for cmd in commands:
            checked.append(_check_command(cmd, topo, validate, ck, where, key_line))
        out.append(FaultEntry(at_s=at_s, at_iteration=at_it, commands=checked, line=line,
                              after_s=after_s))
    return out


def _check_command(cmd: dict, topo: Topology, validate, ck: _Checker, where: str, key_line) -> dict:
    for end in ("a", "b"):
        name = cmd.get(end)
        if name is not None and name not in topo.node_names():
            ck.fail(f"{where} {end}", f"no node {name!r} in this fabric ({topo.spec.planes} planes, "
                    f"{topo.spec.groups} groups, {topo.spec.spines} spines, "
                    f"{topo.spec.hosts_per_group} hosts per group)", key_line(end))
    if validate is not None:
        try:
            return validate(cmd, topo)
        except ValueError as exc:
            ck.fail(where, str(exc), key_line("action"))
    # fallback while controller/faults.py is absent: names and link existence only
    if "b" in cmd:
        try:
            topo.link(cmd["a"], cmd["b"])
        except KeyError as exc:
            ck.fail(where, exc.args[0], key_line("b"))
    return dict(cmd)


def schedule_order(faults: list[FaultEntry]) -> list[FaultEntry]:
    """Iteration-triggered entries keep file order among themselves; timed ones sort by time."""
    return sorted(faults, key=lambda f: (f.at_s is None, f.at_s or 0.0, f.at_iteration or 0))
