"""The worker configuration (worker.json): what the runner writes and every worker reads.

One typed object for both ends, so a key cannot be written under one name and read under
another, and a bad value is refused with its key named before any socket opens. The runner
builds it from a scenario (emulation/run/runner.py worker_config), writes `to_dict()` as JSON; each
worker (traffic/workload/worker.py) reads it back with `load()` and hands it to its transport's factory
(traffic/workload/comm.py create_communicator).

The MRC/RoCE endpoint's own settings travel as the scenario's [mrc.endpoint] and [mrc.qp]
tables (`mrc.endpoint`, `mrc.qp`), keyed exactly as traffic/endpoint_support.EndpointConfig
and traffic/qp_config.MRCConfig name their fields; those classes validate them when the
endpoint is built. Kept free of numpy and the transport modules, so the runner can import it
without paying for them.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from model import timescale
from model.events import TRANSPORTS

# Exit codes of a worker (traffic/workload/worker.py), read back by the runner: EXIT_QP_ERROR is
# a QP in error (the transport's outcome, reported as the run's result), EXIT_TRANSPORT any
# other transport failure (a timeout, a lost connection).
EXIT_OK, EXIT_TRANSPORT, EXIT_MISMATCH, EXIT_CONFIG, EXIT_QP_ERROR = 0, 2, 3, 4, 5
COLLECTIVES = ("allreduce", "reduce_scatter", "allgather", "alltoall", "sendrecv", "incast",
               "bisection")
ROUTINGS = ("srv6", "ecmp")
# EndpointConfig fields each worker sets from the configuration itself (traffic/workload/mrc_comm.py),
# so mrc.endpoint must not carry them too.
ENDPOINT_KEYS_FROM_THE_CONFIG = {
    "host": "hosts", "fabric": "fabric", "routing": "routing", "event_log": "log_dir",
    "goodput_interval_ms": "goodput_interval_ms", "control_socket": "control_dir",
    "qp": "mrc.qp"}


class WorkerConfigError(ValueError):
    """A worker configuration that cannot run; the message names the key and the value."""


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))


def _fail(key: str, message: str, value) -> None:
    raise WorkerConfigError(f"worker config: {key} {message}, got {value!r}")


def _int_at_least(key: str, value, lo: int) -> None:
    if not _is_int(value) or value < lo:
        _fail(key, f"must be an integer >= {lo}", value)


def _positive(key: str, value) -> None:
    if not _is_number(value) or value <= 0:
        _fail(key, "must be a positive number", value)


def _table(name: str, data, cls):
    """Keyword arguments of `cls` from a JSON object, refusing unknown keys by name."""
    if not isinstance(data, dict):
        _fail(name, "must be a table (JSON object)", data)
    known = [f.name for f in fields(cls)]
    unknown = sorted(set(data) - set(known))
    if unknown:
        where = f"{name}: " if name else ""
        raise WorkerConfigError(f"worker config: {where}unknown key(s) {', '.join(unknown)}; "
                                f"known: {', '.join(known)}")
    return data


@dataclass
class TcpSettings:
    """The TCP transport: where every rank accepts connections, one address per plane."""
    endpoints: list            # [rank][plane] -> [addr, port]
    connect_timeout_s: float = 30.0

    def __post_init__(self) -> None:
        if not isinstance(self.endpoints, list) or not self.endpoints or any(
                not isinstance(planes, list) or not planes or any(
                    not isinstance(ep, (list, tuple)) or len(ep) != 2
                    or not isinstance(ep[0], str) or not _is_int(ep[1]) or not 0 < ep[1] < 65536
                    for ep in planes)
                for planes in self.endpoints):
            _fail("tcp.endpoints", "must list, per rank, one [address, port] per plane",
                  self.endpoints)
        self.endpoints = [[[addr, port] for addr, port in planes] for planes in self.endpoints]
        _positive("tcp.connect_timeout_s", self.connect_timeout_s)

    @classmethod
    def from_dict(cls, data: dict) -> "TcpSettings":
        data = _table("tcp", data, cls)
        if "endpoints" not in data:
            raise WorkerConfigError("worker config: tcp needs endpoints (per rank, one "
                                    "[address, port] per plane)")
        return cls(**data)


@dataclass
class MRCSettings:
    """The MRC and RoCE transports (traffic/workload/mrc_comm.py): the scenario's [mrc] table. None
    leaves a setting to the communicator's default; `endpoint` and `qp` are the [mrc.endpoint]
    and [mrc.qp] tables, validated by EndpointConfig and MRCConfig; `host_qp` the
    [mrc.host_qp.<host>] tables, one host's QP settings over `qp`."""
    ring_bytes: int | None = None
    fragment_bytes: int | None = None
    linger_s: float | None = None
    connect_timeout_s: float | None = None
    endpoint: dict = field(default_factory=dict)
    qp: dict = field(default_factory=dict)
    host_qp: dict = field(default_factory=dict)     # host name -> QP settings over `qp`

    def __post_init__(self) -> None:
        for key in ("ring_bytes", "fragment_bytes"):
            value = getattr(self, key)
            if value is not None:
                _int_at_least(f"mrc.{key}", value, 1)
        if self.linger_s is not None and (not _is_number(self.linger_s) or self.linger_s < 0):
            _fail("mrc.linger_s", "must be a number of seconds >= 0", self.linger_s)
        if self.connect_timeout_s is not None:
            _positive("mrc.connect_timeout_s", self.connect_timeout_s)
        for key in ("endpoint", "qp"):
            value = getattr(self, key)
            if not isinstance(value, dict) or any(not isinstance(k, str) for k in value):
                _fail(f"mrc.{key}", "must be a table of settings", value)
        if not isinstance(self.host_qp, dict) or any(
                not isinstance(h, str) or not isinstance(t, dict) or any(
                    not isinstance(k, str) for k in t) for h, t in self.host_qp.items()):
            _fail("mrc.host_qp", "must map host names to tables of QP settings", self.host_qp)
        taken = sorted(set(self.endpoint) & set(ENDPOINT_KEYS_FROM_THE_CONFIG))
        if taken:
            raise WorkerConfigError(f"worker config: mrc.endpoint cannot set {', '.join(taken)}: "
                                    f"the worker sets them from the config's "
                                    f"{', '.join(ENDPOINT_KEYS_FROM_THE_CONFIG[k] for k in taken)}")

    @classmethod
    def from_dict(cls, data: dict) -> "MRCSettings":
        return cls(**_table("mrc", data, cls))


@dataclass
class WorkerConfig:
    """Everything a worker needs; one file for all ranks (the rank comes from --rank)."""
    transport: str                       # tcp | mrc | roce
    world_size: int                      # ranks (= hosts)
    collective: str                      # one of COLLECTIVES
    message_bytes: int                   # per-rank buffer, a multiple of 4 (float32)
    iterations: int                      # timed iterations
    log_dir: str                         # events go to <log_dir>/worker-<host>.jsonl
    hosts: list = field(default_factory=list)   # host names by rank; default h0, h1, ...
    scenario: str = ""                   # the scenario's name (for the reader of worker.json)
    warmup: int = 0                      # untimed iterations first
    qps_per_peer: int = 1                # QPs (connections) per peer; chunks stripe over them
    timeout_s: float = 60.0              # per wait(): a stuck transport fails the worker
    goodput_interval_ms: float = 10.0    # period of goodput events
    incast_target: int = 0               # incast only: the target rank
    victim: list | None = None           # incast only: [src rank, dst rank] of an extra flow
    victim_only: bool = False            # incast only: the victim's ranks carry nothing else
    fabric: dict = field(default_factory=dict)  # model.topology.FabricSpec.to_dict()
    routing: str = "srv6"                # what the MRC endpoint encodes: srv6 | ecmp
    trimming: bool = False               # the fabric trims (the MRC QPs' delay target)
    control_dir: str | None = None       # where endpoints put their control sockets (mrc)
    tcp: TcpSettings | None = None
    mrc: MRCSettings = field(default_factory=MRCSettings)
    # The run's time scale (emulation/calibration/time_scale.py): every setting above is already in the wall
    # world; analysis reads it to give the run's times and rates in the emulated world's.
    time_scale: float = 1.0

    def __post_init__(self) -> None:
        if self.transport not in TRANSPORTS:
            _fail("transport", f"must be one of {', '.join(TRANSPORTS)}", self.transport)
        if self.collective not in COLLECTIVES:
            _fail("collective", f"must be one of {', '.join(COLLECTIVES)}", self.collective)
        _int_at_least("world_size", self.world_size, 1)
        if not _is_int(self.message_bytes) or self.message_bytes <= 0 or self.message_bytes % 4:
            _fail("message_bytes", "must be a positive multiple of 4 (float32 elements)",
                  self.message_bytes)
        _int_at_least("iterations", self.iterations, 1)
        _int_at_least("warmup", self.warmup, 0)
        _int_at_least("qps_per_peer", self.qps_per_peer, 1)
        _positive("timeout_s", self.timeout_s)
        _positive("goodput_interval_ms", self.goodput_interval_ms)
        try:
            timescale.check(self.time_scale)
        except timescale.TimeScaleError as exc:
            raise WorkerConfigError(f"worker config: {exc}") from None
        if not isinstance(self.log_dir, str) or not self.log_dir:
            _fail("log_dir", "must be a directory path", self.log_dir)
        if not self.hosts:
            self.hosts = [f"h{i}" for i in range(self.world_size)]
        if (not isinstance(self.hosts, list) or len(self.hosts) != self.world_size
                or any(not isinstance(h, str) or not h for h in self.hosts)):
            _fail("hosts", f"must name each of the {self.world_size} ranks' hosts", self.hosts)
        if not _is_int(self.incast_target) or not 0 <= self.incast_target < self.world_size:
            _fail("incast_target", f"must be a rank 0..{self.world_size - 1}", self.incast_target)
        if self.victim is not None:
            v = self.victim
            if (not isinstance(v, (list, tuple)) or len(v) != 2
                    or any(not _is_int(r) or not 0 <= r < self.world_size for r in v)
                    or v[0] == v[1]):
                _fail("victim", f"must be [src rank, dst rank], two different ranks "
                      f"0..{self.world_size - 1}, or null", v)
            self.victim = list(v)
        if not isinstance(self.victim_only, bool):
            _fail("victim_only", "must be true or false", self.victim_only)
        if not isinstance(self.trimming, bool):
            _fail("trimming", "must be true or false", self.trimming)
        if self.routing not in ROUTINGS:
            _fail("routing", f"must be one of {', '.join(ROUTINGS)}", self.routing)
        if not isinstance(self.fabric, dict):
            _fail("fabric", "must be a table (FabricSpec fields)", self.fabric)
        if self.tcp is not None and not isinstance(self.tcp, TcpSettings):
            self.tcp = TcpSettings.from_dict(self.tcp)
        if not isinstance(self.mrc, MRCSettings):
            self.mrc = MRCSettings.from_dict(self.mrc)
        if self.transport == "tcp":
            if self.tcp is None:
                raise WorkerConfigError("worker config: the tcp transport needs tcp.endpoints")
            if len(self.tcp.endpoints) != self.world_size:
                _fail("tcp.endpoints", f"must list one entry per rank ({self.world_size})",
                      self.tcp.endpoints)

    def host(self, rank: int) -> str:
        """The host name of `rank`, refusing a rank the configuration has no host for."""
        if not _is_int(rank) or not 0 <= rank < self.world_size:
            raise WorkerConfigError(f"--rank {rank} out of range for world_size {self.world_size}")
        return self.hosts[rank]

    def to_dict(self) -> dict:
        """The JSON object of worker.json (tcp omitted when the run has no TCP transport)."""
        out = asdict(self)
        if self.tcp is None:
            del out["tcp"]
        return out

    @classmethod
    def from_dict(cls, data) -> "WorkerConfig":
        data = dict(_table("", data, cls))
        missing = [k for k in ("transport", "world_size", "collective", "message_bytes",
                               "iterations", "log_dir") if k not in data]
        if missing:
            raise WorkerConfigError(f"worker config: missing key(s) {', '.join(missing)}")
        try:
            return cls(**data)
        except TypeError as exc:        # a nested value of the wrong shape
            raise WorkerConfigError(f"worker config: {exc}") from None

    @classmethod
    def load(cls, path: str | Path) -> "WorkerConfig":
        """Read worker.json, every failure a WorkerConfigError naming the file."""
        try:
            text = Path(path).read_text()
        except OSError as exc:
            raise WorkerConfigError(f"cannot read worker config {path}: {exc.strerror}") from None
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise WorkerConfigError(f"worker config {path} is not valid JSON: {exc}") from None
        try:
            return cls.from_dict(data)
        except WorkerConfigError as exc:
            raise WorkerConfigError(f"{path}: {exc}") from None

    def write(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=2))
