"""Scenario files (TOML): what fabric, which transports, which collective, which faults when.

Validated completely before anything starts, so a typo fails in a second with the key and line
instead of after a minute of fabric start-up. Every key's type, range, default and meaning is
declared in emulation/config/scenario_schema.py; in outline (every key optional unless marked):

    name = "demo"                       # default: the file's stem
    description = "..."

    [fabric]                            # model.topology.FabricSpec fields
    planes = 2                          # groups, spines, hosts_per_group, host_link_mbit,
    routing = "srv6"                    #   fabric_link_mbit; routing used by mrc: srv6|ecmp
    switch_buffer_kb = 64               # drop-tail buffer of every switch egress port, KiB
    mtu = 1500                          # link MTU of every host and switch port, 1280..9000
                                        #   (omit: HTB's deep default, ~1000 packets;
                                        #   emulation/network/switchqueue.py)
    host_link_delay_ms = 3.0            # one-way propagation delay of every host-T0 link and
    fabric_link_delay_ms = 3.5          #   every T0-T1 link, ms; held in the mrc and roce
                                        #   endpoints' receive path (model/propagation.py)
    time_scale = "auto"                 # the default: the smallest k this machine keeps up
                                        #   with (mrclab calibrate; cached per machine and
                                        #   fabric); a number k >= 1: the emulated world runs k
                                        #   times slower than the wall clock
                                        #   (emulation/calibration/time_scale.py)
    scheduling = "none"                 # "hifi": packet loops and ovs-vswitchd ahead of bulk
                                        #   compute (CPU cgroup weights, nice; undone at stop;
                                        #   emulation/network/scheduling.py)

    [transport]
    names = ["mrc", "roce", "tcp"]      # what `--transport all` runs (and the default)
    tcp_reconvergence_s = 2.0           # ecmp dynamic reconvergence delay for tcp
    roce_reconvergence_s = 2.0          # for roce; omit = static ecmp (no reconvergence)
    tcp_port = 47000

    [collective]
    kind = "allreduce"                  # allreduce|reduce_scatter|allgather|alltoall|sendrecv|
                                        #   incast|bisection (first half of the hosts -> second)
    message_bytes = 1048576             # per rank buffer, multiple of 4
    iterations = 30                     # timed iterations (after warmup)
    iterations_after_faults = 5         # end this many after the last fault (iterations: the most)
    warmup = 2
    qps_per_peer = 2
    timeout_s = 60                      # per wait(): a stuck transport fails the worker
    incast_target = "h0"                # incast only
    victim = ["h1", "h2"]               # incast only: extra flow src -> dst
    victim_only = true                  # incast only: the victim's hosts carry nothing else

    [options]
    trimming = true                     # in-fabric packet trimming (mrc)
    capture = true                      # tcpdump on every host port (snap length: every MRC header whole)
    goodput_interval_ms = 10
    metrics_port = 9302                 # live counters for Prometheus on 127.0.0.1 (omit: none)
    control_class = true                # every port serves SACKs, NACKs, probes ahead of data

    [[faults]]                          # any number, applied in time order; times are
                                        #   the emulated world's
    at_iteration = 10                   # when any rank starts timed iteration 10, or
    at_s = 2.0                          # seconds after the timed iterations start, or
    after_s = 3.0                       # this long after the previous entry (file order) was
                                        #   applied: a repair that comes even if the fault
                                        #   stalled the collective (a baseline stuck on a dead
                                        #   path still sees the link come back)
                                        # every entry must be due inside the traffic at line
                                        #   rate (emulation/config/scenario_timing.py)
    action = "link_down"                # controller fault API action
    a = "t0p0g0"                        # link ends (or a = switch for blackhole), or
    b = "t1p0s0"
    links = "host"                      # instead of a/b: every "host", "fabric" or "all" link,
                                        #   or a switch's name: all its links (a switch down)
    # the action's own parameters (percent, period_s, ...: model/faults.py)

    [mrc]                               # MRC/RoCE endpoint settings, passed to every worker
    ring_bytes = 4194304                # receive ring per QP (traffic/workload/mrc_comm.py)
    fragment_bytes = 262144             # WRITE-with-IMM fragment, <= ring_bytes / 2
    linger_s = 30                       # after its last iteration, answer peers until all are done, at most this long
    connect_timeout_s = 60
    [mrc.endpoint]                      # the endpoint's own settings (EndpointConfig fields;
    base_rtt_ns = 2000000               #   host, fabric, routing, event_log: set by the runner),
                                        #   here a fixed base RTT (omit: probed at start)
    [mrc.qp]                            # every QP setting, named as traffic.core.qp_config.MRCConfig
    ev_count = 32                       #   names it, over the endpoint's defaults for the
    rto_rtts = 25.0                     #   emulated fabric (EMULATED_FABRIC_QP_DEFAULTS)
    [mrc.nscc]                          # NSCC, named as OCP mrc_ctl.h mrc_ctl_cc_nscc_cfg
    qa_gate = 3                         #   (traffic/core/nscc.py: rules and uet-htsim defaults)
    [mrc.host_qp.h1]                    # [mrc.qp] keys for the QPs host h1 opens, over [mrc.qp]
    ev_pin_spine = 0                    #   (an experiment's per-flow setting)

    [cluster]                           # spread the fabric over servers (emulation/config/
    servers = ["localhost", "b"]        #   scenario_cluster.py); the first runs mrclab
    placement = "plane"                 # plane | pod | explicit ([cluster.nodes])

    [short]                             # `mrclab run FILE --short`: the test-sized version
    iterations = 12                     # any [collective] key (message_bytes, warmup, timeout_s..)
    message_bytes = 262144
    capture = false                     # any [options] key
    fault_time_factor = 0.5             # multiplies every fault's at_s, after_s, a flap's
                                        # period_s; at_iteration scales with short/full iterations
    fabric_time_scale = 1               # the short version's [fabric] time_scale (a number)

The short version exists so tests can run every shipped scenario in seconds with the same fault
schedule in miniature; parse() validates both versions whenever a [short] table is present, so a
short version that would not run is caught by --validate-only, too (emulation/config/scenario_short.py).
The [[faults]] entries are checked in emulation/config/scenario_faults.py.
"""
from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from emulation.config.scenario_schema import (
    COLLECTIVE,
    COLLECTIVES,
    FABRIC,
    MRC,
    MRC_ENDPOINT,
    MRC_ENDPOINT_RESERVED,
    MRC_NSCC,
    MRC_NSCC_RESERVED,
    MRC_QP,
    MRC_QP_RESERVED,
    MRC_RESERVED,
    OPTIONS,
    ROUTINGS,
    TOP,
    TRANSPORT,
    TRANSPORTS,
    Checker,
    ScenarioError,
    type_error,
    with_defaults,
)
from emulation.config.scenario_cluster import ClusterSpec, parse_cluster
from emulation.config.scenario_faults import FaultEntry, parse_faults
from emulation.config.scenario_short import apply_short
from model import propagation
from model.ports import CONTROLLER_PORTS
from model.safe_read import NotRegularFile, read_regular
from model.topology import FabricSpec, SpecError, Topology
from traffic.nic.endpoint_support import ConfigError, EndpointConfig
from traffic.core.qp_config import MRCConfig, roce_ack_timeout_ns
from traffic.core.evs import default_ev_count

__all__ = ["COLLECTIVES", "CollectiveSpec", "ROUTINGS", "Scenario", "ScenarioError",
           "TRANSPORTS", "load", "parse"]

# A run's name becomes a directory name under results/: no path separators, no leading dot
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


@dataclass
class CollectiveSpec:
    kind: str = COLLECTIVE["kind"].default
    message_bytes: int = COLLECTIVE["message_bytes"].default
    iterations: int = COLLECTIVE["iterations"].default
    iterations_after_faults: int | None = None
    warmup: int = COLLECTIVE["warmup"].default
    qps_per_peer: int = COLLECTIVE["qps_per_peer"].default
    timeout_s: float = COLLECTIVE["timeout_s"].default
    incast_target: str | None = None
    victim: list | None = None
    victim_only: bool = COLLECTIVE["victim_only"].default


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
    fabric_mtu: int = FABRIC["mtu"].default    # link MTU of every host and switch port
    # k >= 1 or "auto" (emulation/calibration/time_scale.py): rates and times above are the emulated
    # world's as declared; the runner builds the wall world from them
    time_scale: float | str = FABRIC["time_scale"].default
    control_class: bool = OPTIONS["control_class"].default   # ACKs ahead of data at every port
    metrics_port: int | None = None            # live counters (emulation/run/metrics_server.py)
    scheduling: str = FABRIC["scheduling"].default   # emulation/network/scheduling.py
    cluster: ClusterSpec | None = None         # [cluster]: servers and placement; None: here

    @cached_property
    def topology(self) -> Topology:
        return Topology(self.spec)

    def transports_of(self, choice: str) -> list[str]:
        """What `--transport <choice>` runs: every one of [transport] names for "all"."""
        return list(self.transports) if choice == "all" else [choice]

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


# ---------------------------------------------------------------- loading


EXPERIMENTS_DIR = Path(__file__).resolve().parents[2] / "experiments"


def find(name: str | Path) -> Path:
    """The scenario file `name` names: the path as given, else (a bare name, with or without
    .toml) experiments/<name>.toml under the working directory, then the shipped one. Raises
    ScenarioError listing the shipped names when there is none."""
    path = Path(name)
    if path.exists() or len(path.parts) > 1:
        return path
    file = path.name if path.suffix == ".toml" else f"{path.name}.toml"
    for folder in (Path("experiments"), EXPERIMENTS_DIR):
        if (folder / file).is_file():
            return folder / file
    shipped = ", ".join(sorted(p.stem for p in EXPERIMENTS_DIR.glob("*.toml")))
    raise ScenarioError(f"scenario {str(name)!r} not found: no such file, and no "
                        f"experiments/{file}; shipped scenarios: {shipped}")


MAX_SCENARIO_BYTES = 1 << 20      # the largest shipped scenario is a few kB


def load(path: str | Path, short: bool = False) -> Scenario:
    path = find(path)
    try:
        raw = read_regular(path, MAX_SCENARIO_BYTES)
    except NotRegularFile as exc:
        raise ScenarioError(f"cannot read scenario: {exc}") from None
    except OSError as exc:
        raise ScenarioError(f"cannot read scenario {path}: {exc.strerror}") from None
    return parse(_decode(raw, str(path)), source=str(path), default_name=path.stem, path=path,
                 short=short)


def _decode(raw: bytes, source: str) -> str:
    """TOML files are UTF-8 (TOML 1.0, "Spec"); name the line of the first byte that is not."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise ScenarioError(f"{source}:{line}: not UTF-8 text (byte {raw[exc.start]:#04x} at "
                            f"offset {exc.start}); TOML files must be UTF-8") from None


def parse(text: str, source: str = "<scenario>", default_name: str = "scenario",
          path: Path | None = None, short: bool = False) -> Scenario:
    """The scenario of `text`; with short=True its [short] version (an error if it has none).
    Both versions are validated whenever the file has a [short] table."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"{source}: not valid TOML: {exc}") from None
    except RecursionError:
        raise ScenarioError(f"{source}: arrays or tables nested too deeply to be a scenario") \
            from None
    ck = Checker(source, text)
    full = _build(data, ck, default_name, path, text)
    if "short" not in data:
        if short:
            raise ScenarioError(f"{source}: has no [short] table, so there is no short version "
                                f"(add one: see emulation/config/scenario.py)")
        return full
    ck.errors = []              # the full version had none; the short one's are its own
    short_data = apply_short(data, ck, full.collective.iterations)
    try:
        small = _build(short_data, ck, default_name, path, text)
    except ScenarioError as exc:
        raise ScenarioError(f"{exc} (in the short version: [short] overrides applied)") from None
    small.short = True
    small.has_short = full.has_short = True
    return small if short else full


def _build(data: dict, ck: Checker, default_name: str, path: Path | None,
           text: str) -> Scenario:
    for key, value in data.items():
        if key not in TOP:
            ck.note(key, f"unknown top-level key; known: {', '.join(TOP)}",
                    ck.loc.key("", key) or ck.loc.table(key))
            continue
        problem = type_error(TOP[key], value)
        if problem:
            ck.fail(key, problem, ck.loc.key("", key))
    name = data.get("name", default_name)
    if not NAME_PATTERN.fullmatch(name):
        ck.note("name", f"use up to 64 letters, digits, '-', '_' or '.', starting with a letter or "
                f"digit (it names the results directory), got {name!r}", ck.loc.key("", "name"))
    description = data.get("description", "")

    fab = with_defaults(ck.table(data, "fabric", FABRIC), FABRIC)
    spec_args = {k: v for k, v in fab.items() if k in FabricSpec.__dataclass_fields__}
    try:
        spec = FabricSpec.from_dict(spec_args)
    except SpecError as exc:
        bad = next((k for k in spec_args if str(exc).startswith(k)), None)
        ck.fail(f"[fabric] {bad}" if bad else "[fabric]", str(exc),
                ck.loc.key("fabric", bad) if bad else ck.loc.table("fabric"))
    topo = Topology(spec)

    tr = with_defaults(ck.table(data, "transport", TRANSPORT), TRANSPORT)
    names = tr["names"]
    if not names or len(set(names)) != len(names):
        ck.note("[transport] names", "must list each transport once, at least one",
                ck.loc.key("transport", "names"))

    coll = CollectiveSpec(**with_defaults(ck.table(data, "collective", COLLECTIVE), COLLECTIVE))
    _check_collective(coll, ck, topo)

    op = with_defaults(ck.table(data, "options", OPTIONS), OPTIONS)
    if op["metrics_port"] in CONTROLLER_PORTS:
        ck.note("[options] metrics_port", f"{op['metrics_port']} is "
                f"{CONTROLLER_PORTS[op['metrics_port']]} on the same address; choose another",
                ck.loc.key("options", "metrics_port"))
    mrc = _parse_mrc(data, ck, spec)
    _check_ring_memory(mrc, coll, spec, ck)
    faults = parse_faults(data.get("faults", []), ck, topo, coll)
    cluster = parse_cluster(data, ck, topo)
    scn = Scenario(name=name, description=description, spec=spec, routing=fab["routing"],
                   transports=list(names), tcp_reconvergence_s=tr["tcp_reconvergence_s"],
                   roce_reconvergence_s=tr["roce_reconvergence_s"], tcp_port=tr["tcp_port"],
                   collective=coll, trimming=op["trimming"], capture=op["capture"],
                   goodput_interval_ms=op["goodput_interval_ms"], faults=faults, path=path,
                   text=text, mrc=mrc, switch_buffer_kb=fab["switch_buffer_kb"],
                   fabric_mtu=fab["mtu"], metrics_port=op["metrics_port"],
                   time_scale=fab["time_scale"], control_class=op["control_class"],
                   scheduling=fab["scheduling"],
                   cluster=cluster)
    ck.raise_errors()
    scn.__dict__["topology"] = topo            # the cached_property's value: built once
    return scn


DEFAULT_RING_BYTES = 4 << 20        # traffic/workload/mrc_comm.py's (it imports the endpoint)
# Every MRC/RoCE QP holds a receive ring of ring_bytes (traffic/workload/mrc_comm.py); all the
# hosts share the machine's memory, so one host's rings are bounded well below it.
MAX_RING_BYTES_PER_HOST = 4 << 30


def _check_ring_memory(mrc: dict, coll: CollectiveSpec, spec: FabricSpec, ck: Checker) -> None:
    """ring_bytes x qps_per_peer x peers: the receive rings one host allocates."""
    ring = mrc.get("ring_bytes", DEFAULT_RING_BYTES)
    per_host = ring * coll.qps_per_peer * (spec.num_hosts - 1)
    if per_host > MAX_RING_BYTES_PER_HOST:
        ck.note("[mrc] ring_bytes", f"{ring} bytes x {coll.qps_per_peer} QPs per peer x "
                f"{spec.num_hosts - 1} peers = {per_host / 2**30:.1f} GiB of receive rings per "
                f"host; at most {MAX_RING_BYTES_PER_HOST >> 30} GiB (lower ring_bytes or "
                f"qps_per_peer)", ck.loc.key("mrc", "ring_bytes"))


def _check_collective(coll: CollectiveSpec, ck: Checker, topo: Topology) -> None:
    """Rules between [collective] keys and the fabric."""
    if coll.message_bytes % 4:
        ck.note("[collective] message_bytes", f"must be a multiple of 4 (float32), got "
                f"{coll.message_bytes}", ck.loc.key("collective", "message_bytes"))
    hosts = [h.name for h in topo.hosts]
    if coll.kind == "incast":
        coll.incast_target = coll.incast_target or hosts[0]
        if coll.incast_target not in hosts:
            ck.note("[collective] incast_target", f"no host {coll.incast_target!r}; hosts are "
                    f"h0..{hosts[-1]}", ck.loc.key("collective", "incast_target"))
        if coll.victim is not None:
            v = coll.victim
            line = ck.loc.key("collective", "victim")
            if len(v) != 2 or any(x not in hosts for x in v) or v[0] == v[1]:
                ck.fail("[collective] victim", f"must be [src, dst], two different hosts of "
                        f"h0..{hosts[-1]}, got {v!r}", line)
            if v[1] == coll.incast_target:
                ck.note("[collective] victim", "the victim flow's destination must not be the "
                        "incast target (it should share only part of the path)", line)
            if coll.victim_only and v[0] == coll.incast_target:
                ck.note("[collective] victim", "with victim_only the victim's source must not "
                        "be the incast target either", line)
            if coll.victim_only and len(hosts) < 4:
                ck.note("[collective] victim_only", f"leaves no incast sender on {len(hosts)} "
                        "hosts (target + victim pair + at least one sender)",
                        ck.loc.key("collective", "victim_only"))
        elif coll.victim_only:
            ck.note("[collective] victim_only", "needs a victim = [src, dst]",
                    ck.loc.key("collective", "victim_only"))
    else:
        if coll.kind == "bisection" and len(hosts) % 2:
            ck.note("[collective] kind", f"bisection pairs the first half of the hosts with the "
                    f"second and needs an even number of hosts, the fabric has {len(hosts)}",
                    ck.loc.key("collective", "kind"))
        if coll.victim_only:
            ck.note("[collective] victim_only", "only used by kind = \"incast\"",
                    ck.loc.key("collective", "victim_only"))
        for key in ("incast_target", "victim"):
            if getattr(coll, key) is not None:
                ck.note(f"[collective] {key}", "only used by kind = \"incast\"",
                        ck.loc.key("collective", key))


def _parse_mrc(data: dict, ck: Checker, spec: FabricSpec) -> dict:
    """[mrc] -> the worker config's "mrc" table (read by traffic/workload/mrc_comm.py create()): only the
    keys the file sets, so the transport's own defaults apply to the rest. Besides the schema,
    the real config objects are built, so the rules owned by traffic/nic/endpoint_support.py and
    traffic/core/qp_config.py apply unchanged."""
    out = ck.table(data, "mrc", MRC, reserved=MRC_RESERVED)
    raw = data.get("mrc", {})
    ring = out.get("ring_bytes", DEFAULT_RING_BYTES)
    frag = out.get("fragment_bytes", 256 << 10)
    if frag > ring // 2:
        ck.fail("[mrc] fragment_bytes", f"must be at most ring_bytes / 2 = {ring // 2}, got {frag}",
                ck.loc.key("mrc", "fragment_bytes"))
    endpoint = ck.table(raw, "endpoint", MRC_ENDPOINT, parent="mrc",
                        reserved=MRC_ENDPOINT_RESERVED)
    qp = ck.table(raw, "qp", MRC_QP, parent="mrc", reserved=MRC_QP_RESERVED)
    nscc = ck.table(raw, "nscc", MRC_NSCC, parent="mrc", reserved=MRC_NSCC_RESERVED)
    out.pop("nscc", None)           # reaches the QPs as [mrc.qp] nscc_<key>
    qp.update({f"nscc_{key}": value for key, value in nscc.items()})
    _check_mrc_rules(endpoint, qp, ck, spec)
    _check_waits_cover_propagation(endpoint, qp, ck, spec)
    host_qp = _parse_host_qp(raw, endpoint, qp, ck, spec)
    if host_qp:
        out["host_qp"] = host_qp

    if "endpoint" in raw:
        try:
            EndpointConfig.from_dict({"host": 0, "fabric": spec.to_dict(), **endpoint})
        except (ConfigError, TypeError, ValueError) as exc:
            ck.fail("[mrc.endpoint]", str(exc), _line_of_named_key(
                ck, "mrc.endpoint", endpoint, str(exc)))
        out["endpoint"] = endpoint
    if "qp" in raw or "nscc" in raw:
        try:         # the QP settings as an endpoint applies them: over its defaults
            EndpointConfig.from_dict({"host": 0, "fabric": spec.to_dict(), "qp": qp})
        except (ConfigError, TypeError, ValueError) as exc:
            table = "mrc.qp" if "qp" in raw else "mrc.nscc"
            ck.fail(f"[{table}]", str(exc).removeprefix("qp: "),
                    _line_of_named_key(ck, table, qp, str(exc)))
        out["qp"] = qp
    return out


# QP settings summary.json reads as the run's (emulation/run/run_summary.py): no host may differ.
RUN_WIDE_QP_KEYS = frozenset({"loss_policy", "rto_max_ns"})


def _parse_host_qp(raw: dict, endpoint: dict, qp: dict, ck: Checker, spec: FabricSpec) -> dict:
    """[mrc.host_qp.<host>]: QP settings for the QPs one host opens, over [mrc.qp] (an
    experiment pins one flow's EVs and leaves another's free, as the paper's ECN test forces
    one flow onto one EV). Each is checked as [mrc.qp] is, merged: {host name: its keys}."""
    if "host_qp" not in raw:
        return {}
    tables = raw["host_qp"]
    if not isinstance(tables, dict):
        ck.fail("[mrc] host_qp", f"must be tables [mrc.host_qp.<host>], got {tables!r}",
                ck.loc.key("mrc", "host_qp"))
    hosts = [h.name for h in Topology(spec).hosts]
    out = {}
    for name in tables:
        table = f"mrc.host_qp.{name}"
        if name not in hosts:
            ck.fail(f"[{table}]", f"{name!r} is not a host of the fabric ({hosts[0]}.."
                    f"{hosts[-1]})", ck.loc.table(table))
        own = ck.table(tables, name, MRC_QP, parent="mrc.host_qp", reserved=MRC_QP_RESERVED)
        for key in sorted(RUN_WIDE_QP_KEYS & set(own)):
            ck.fail(f"[{table}] {key}", "is one setting for the whole run (the summary judges "
                    "every EV retirement by it): set it in [mrc.qp]", ck.loc.key(table, key))
        merged = {**qp, **own}
        _check_mrc_rules(endpoint, merged, ck, spec, table)
        if "ev_pin_spine" in own:       # the count the pin implies, as for [mrc.qp]
            own.setdefault("ev_pin_count", merged["ev_pin_count"])
        try:
            EndpointConfig.from_dict({"host": 0, "fabric": spec.to_dict(), "qp": merged})
        except (ConfigError, TypeError, ValueError) as exc:
            ck.fail(f"[{table}]", str(exc).removeprefix("qp: "), ck.loc.table(table))
        out[name] = own
    return out


def _line_of_named_key(ck: Checker, table: str, keys: dict, message: str) -> int | None:
    """The line of the first of `keys` the message names (a rule between keys, or the
    endpoint's own check), else the table's line."""
    for key in keys:
        if re.search(rf"\b{re.escape(key)}\b", message):
            return ck.loc.key(table, key)
    return ck.loc.table(table) or ck.loc.key("mrc", table.rpartition(".")[2])


def _check_mrc_rules(endpoint: dict, qp: dict, ck: Checker, spec: FabricSpec,
                     table: str = "mrc.qp") -> None:
    """Rules between [mrc.endpoint], [mrc.qp] and the fabric, which neither config object can
    see alone (which planes the endpoint opens, how many EVs a QP then has per plane). `qp` is
    [mrc.qp], or a host's QP settings over it (`table` names the one to blame)."""

    planes = endpoint.get("planes")
    if planes is not None:
        if not planes or len(set(planes)) != len(planes) or any(
                not 0 <= p < spec.planes for p in planes):
            ck.note("[mrc.endpoint] planes", f"must list plane numbers 0..{spec.planes - 1}, "
                    f"each once, at least one, got {planes!r}", ck.loc.key("mrc.endpoint", "planes"))
    used_planes = len(planes) if planes else spec.planes
    ev_count = qp.get("ev_count") or default_ev_count(
        spec.spines, used_planes, qp.get("evs_per_path", MRCConfig.evs_per_path))
    if ev_count < used_planes:
        ck.note(f"[{table}] ev_count", f"must be at least the number of planes in use "
                f"({used_planes}): EVs are split equally over the planes, got {ev_count}",
                ck.loc.key(table, "ev_count"))
    elif ev_count % used_planes:
        ck.note(f"[{table}] ev_count", f"must be a multiple of the number of planes in use "
                f"({used_planes}): EVs are split equally over the planes, so {ev_count} would "
                f"run {ev_count // used_planes * used_planes}", ck.loc.key(table, "ev_count"))
    if qp.get("ev_min_active", 0) > ev_count:
        ck.note(f"[{table}] ev_min_active", f"must be at most ev_count ({ev_count}), got "
                f"{qp['ev_min_active']}", ck.loc.key(table, "ev_min_active"))
    if "ev_pin_spine" in qp or "ev_pin_count" in qp:
        _check_ev_pinning(qp, ck, spec, ev_count // used_planes, table)
    lo = qp.get("rto_min_ns", MRCConfig.__dataclass_fields__["rto_min_ns"].default)
    hi = qp.get("rto_max_ns", MRCConfig.__dataclass_fields__["rto_max_ns"].default)
    if lo > hi:
        key = "rto_min_ns" if "rto_min_ns" in qp else "rto_max_ns"
        ck.note(f"[{table}] {key}", f"rto_min_ns ({lo}) must not exceed rto_max_ns ({hi})",
                ck.loc.key(table, key))


def _check_waits_cover_propagation(endpoint: dict, qp: dict, ck: Checker,
                                   spec: FabricSpec) -> None:
    """A fixed wait for an answer across the fabric must outlast the links' propagation both
    ways on the longest path (model/propagation.py), or it expires before any answer can come:
    every path probe would fail, every packet time out. Waits in base RTTs grow with the
    measured RTT, which holds the propagation, and need no rule."""
    prop_ns = 2 * propagation.one_way_delay_ns(spec)
    if not prop_ns:
        return
    waits = [("mrc.endpoint", "base_rtt_ns", endpoint.get("base_rtt_ns")),
             ("mrc.qp", "rto_ns", qp.get("rto_ns")),
             ("mrc.qp", "roce_ack_timeout_ns", qp.get("roce_ack_timeout_ns")),
             ("mrc.qp", "roce_ack_timeout", None if qp.get("roce_ack_timeout") is None
              else roce_ack_timeout_ns(qp["roce_ack_timeout"]))]
    if endpoint.get("path_probe_interval_ms"):
        timeout_ms = endpoint.get("path_probe_timeout_ms",
                                  EndpointConfig.__dataclass_fields__["path_probe_timeout_ms"]
                                  .default)
        waits.append(("mrc.endpoint", "path_probe_timeout_ms", int(timeout_ms * 1e6)))
    for table, key, wait_ns in waits:
        if wait_ns is not None and wait_ns <= prop_ns:
            ck.note(f"[{table}] {key}", f"waits {wait_ns / 1e6:g} ms, no longer than the "
                    f"links' propagation both ways on the longest path ({prop_ns / 1e6:g} ms: "
                    f"[fabric] host_link_delay_ms and fabric_link_delay_ms, two of each per "
                    f"direction); no answer can come in time", ck.loc.key(table, key))


def _check_ev_pinning(qp: dict, ck: Checker, spec: FabricSpec, per_plane: int,
                      table: str = "mrc.qp") -> None:
    """ev_pin_spine / ev_pin_count ([mrc.qp] or a host's) against the fabric (traffic/core/evs.py
    "Pinning")."""
    if "ev_pin_spine" not in qp:
        ck.fail(f"[{table}] ev_pin_count", "needs ev_pin_spine (the spine to pin to)",
                ck.loc.key(table, "ev_pin_count"))
    if qp["ev_pin_spine"] >= spec.spines:
        ck.note(f"[{table}] ev_pin_spine", f"must be a spine of the fabric, 0..{spec.spines - 1}, "
                f"got {qp['ev_pin_spine']}", ck.loc.key(table, "ev_pin_spine"))
    count = qp.get("ev_pin_count", per_plane)
    if count > per_plane:
        ck.note(f"[{table}] ev_pin_count", f"must be at most the active EVs per plane "
                f"(ev_count / planes = {per_plane}), got {count}",
                ck.loc.key(table, "ev_pin_count"))
    if count < per_plane and spec.spines < 2:
        ck.note(f"[{table}] ev_pin_count", f"leaves {per_plane - count} EVs per plane for other "
                "spines, and the fabric has one", ck.loc.key(table, "ev_pin_count"))
    qp.setdefault("ev_pin_count", count)
