"""Every key of a scenario's [mrc], [mrc.endpoint], [mrc.qp] and [mrc.nscc] tables reaches the code it names.

Each key is set to a value other than what the same scenario gives without it, and the
scenario goes down the runner's own path: emulation.config.scenario.parse -> runner.worker_config ->
traffic.workload.mrc_comm.create (what the worker's create_communicator calls for "mrc") -> EndpointConfig
-> Endpoint -> MRCComm -> QP (MRCConfig, SenderQP). Two ranks in threads, joined by the in-memory
switch of test_endpoint_mrc_comm instead of a fabric. Then the value is read where it is used.

The keys come from the scenario schema, not from this file: a key added to the schema without a
reader in READERS fails test_every_scenario_key_has_a_reader, so a new key cannot be accepted,
validated and logged while reaching nothing.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, fields
from pathlib import Path

import pytest

from emulation.run import runner
from emulation.config import scenario as S
from model.topology import FabricSpec
from traffic.core.loss_policy import OcpLossPolicy, TolerantLossPolicy
from tests.helpers.endpoint_fakes import FakeSwitch
from traffic.workload.comm import CommError
from traffic.nic.endpoint import port_class_for
from traffic.workload.mrc_comm import FRAG, create

BASE = """
name = "plumbing"
[fabric]
time_scale = 1
planes = 2
groups = 1
spines = 2
hosts_per_group = 2
[collective]
kind = "sendrecv"
message_bytes = 4096
iterations = 1
"""


def schema_keys() -> dict[str, list[str]]:
    """Scalar keys of [mrc], [mrc.endpoint] and [mrc.qp], as the scenario validator knows them."""
    try:
        from emulation.config import scenario_schema as schema
    except ImportError:
        schema = None
    if schema is not None:
        return {table: [k for k, spec in schema.SCHEMA[table].items()
                        if spec.kind not in ("table", "array")]
                for table in ("mrc", "mrc.endpoint", "mrc.qp", "mrc.nscc")}
    from traffic.nic.endpoint_support import EndpointConfig
    from traffic.core.reliability import MRCConfig
    return {"mrc": [k for k in S.MRC_KEYS if k not in ("endpoint", "qp")],
            "mrc.endpoint": [f.name for f in fields(EndpointConfig)
                             if f.name not in S.MRC_ENDPOINT_RESERVED and f.name != "qp"],
            "mrc.qp": [f.name for f in fields(MRCConfig)]}


@dataclass
class World:
    """Rank 0's objects after the communicator connected, and the switch joining the ranks."""
    comm: object
    switch: FakeSwitch

    @property
    def ep(self):
        return self.comm.ep

    @property
    def qp(self):
        return self.ep.qps[self.comm.qps[(1, 0)].qpn]

    @property
    def qcfg(self):
        return self.qp.sender.cfg


def unreachable_probe(w: World) -> tuple[int, int]:
    """(base RTT the endpoint falls back to, probes it sent per round) when the peer never
    answers (its ports unplugged from the switch): measure_base_rtt sends rtt_probe_count
    probes per round, 3 to 10 rounds."""
    unplugged = {k: w.switch.ports.pop(k) for k in list(w.switch.ports) if k[0] == 1}
    try:
        before = w.ep._rtt_probe_seq
        fallback = w.ep.measure_base_rtt(1, timeout_s=0.01)
        sent = w.ep._rtt_probe_seq - before
    finally:
        w.switch.ports.update(unplugged)
    rounds = [r for r in range(3, 11) if sent % r == 0 and sent // r < 100]
    return fallback, sent // rounds[0] if rounds else -1


# (value, reader): reader(World) -> the value as the consuming code holds it, in the key's units
READERS = {
    "mrc": {
        "ring_bytes": (1 << 19, lambda w: len(w.comm.qps[(1, 0)].recv_ring)),
        "fragment_bytes": (32 << 10, lambda w: w.comm.max_data + FRAG.size),
        "linger_s": (0.05, lambda w: w.comm.linger_s),
        # connect_timeout_s: test_connect_timeout_is_applied (a timeout is seen by timing out)
        "connect_timeout_s": (None, None),
    },
    "mrc.endpoint": {
        # the NIC ports Endpoint opens come from config.planes; here the test supplies them
        "planes": ([1], lambda w: w.ep.config.planes),
        "port_rate_mbit": (80.0, lambda w: w.ep.pacers[0].bytes_per_ns * 8e3),
        "pacing_fraction": (0.9, lambda w: w.qcfg.port_rate_Bps
                            / (w.ep.config.port_rate_mbit * 1e6 / 8)),
        "pacing_burst_packets": (6, lambda w: w.qcfg.pacing_burst_packets),
        "max_payload": (1000, lambda w: w.qcfg.max_payload),
        "base_rtt_ns": (4_500_000, lambda w: w.qcfg.base_rtt_ns),
        "default_base_rtt_ns": (7_000_000, lambda w: unreachable_probe(w)[0]),
        "rtt_probe_count": (11, lambda w: unreachable_probe(w)[1]),
        # the floor of the QP's base RTT (the fake switch's RTT is far below it)
        "min_base_rtt_ns": (4_000_000, lambda w: w.qp.base_rtt_ns),
        "fast_path": (False, lambda w: port_class_for(w.ep.config).__name__ == "RingPort"),
        "port_poll_ms": (5.0, lambda w: w.ep.config.port_poll_ms),
        "port_poll_backstop_ms": (250.0, lambda w: w.ep.config.port_poll_backstop_ms),
        "seed": (12345, lambda w: w.ep._seed),
        "path_probe_interval_ms": (30.0, lambda w: w.ep.prober and w.ep.prober.interval_ns / 1e6),
        "path_probe_timeout_ms": (300.0, lambda w: w.ep.prober and w.ep.prober.timeout_ns / 1e6),
        "path_probe_margin_ms": (1500.0, lambda w: w.ep.prober
                                 and w.ep.prober.other_path_margin_ns / 1e6),
        "ev_event_rate_per_s": (20.0, lambda w: w.ep.ev_events.rate_per_s),
    },
    "mrc.qp": {name: (value, lambda w, name=name: getattr(w.qcfg, name)) for name, value in {
        "ev_count": 24, "evs_per_path": 2, "ev_backup_count": 10, "ev_min_active": 5, "probe_k": 4,
        "probe_period_rtts": 7.0, "probe_timeout_rtts": 9.0, "probe_backoff_max": 4,
        "skip_rtts": 2.5, "skip_backoff_max": 6, "mpr": 4, "start_psn": 1000,
        "rto_ns": 8_000_000, "rto_rtts": 5.0, "rto_min_ns": 2_000_000,
        "rto_max_ns": 900_000_000, "max_wimm": 7, "retry_linear_count": 5, "retry_exp_count": 9,
        "retry_fixed_interval": False, "suspend_siblings": True, "ack_timeout": 12,
        "reorder_rtts": 0.75, "adaptive_reorder": False, "congestion_grace_rtts": 6.0,
        "congestion_delay_rtts": 1.5, "congestion_forgive_rtts": 50.0, "ack_every": 3,
        "ack_delay_ns": 700_000, "ack_delay_rtts": 0.4, "nscc_enabled": False,
        "nscc_prop_gain": 1.5, "nscc_max_window_bdp": 2.0, "nscc_initial_window_bdp": 0.5,
        "fabric_delay_bound_ns": 456_000, "first_packet_grace": False, "stall_burst_rtts": 1.5,
        "loss_verdict_ns": 50_000_000, "nscc_min_base_rtt_ns": 1_500_000,
        "nscc_frame_rtt_ns": 3_300_000,
        "header_overhead": 100,
        "reverse_evs_per_plane": 3, "reverse_probe_rtts": 1.5,
        "reverse_probe_fail_limit": 3, "reverse_idle_rtts": 50.0, "tail_sack_copy": False,
        "tail_copy_wait_rtts": 2.5,
        "roce_window_psns": 512,
        "roce_retry_limit": 6, "roce_ack_timeout_ns": 3_000_000_000, "probe_period_ns": 12_000_000, "skip_ns": 1_400_000}.items()},
}
# [mrc.nscc]: mrc_ctl_cc_nscc_cfg's names, read off the Nscc object the sender consults.
READERS["mrc.nscc"] = {name: (value, lambda w, attr=attr: getattr(w.qp.sender.nscc, attr))
                       for name, value, attr in (
    ("disable_qa", True, "disable_qa"), ("adjust_bytes_threshold", 12_345, "adjust_bytes_threshold"),
    ("adjust_period_threshold", 3_456_789, "adjust_period_ns"), ("eta", 777.0, "eta"),
    ("fi", 4321.0, "fi"), ("fi_scale", 0.5, "fi_scale"), ("gamma", 0.7, "gamma"),
    ("max_md_jump", 0.4, "max_md_jump"), ("max_cwnd", 123_456, "max_window"),
    ("qa_gate", 2, "qa_gate"), ("qa_threshold", 9_876_543, "qa_threshold_ns"),
    ("target_delay", 1_234_567, "target_ns"), ("delay_alpha", 0.25, "delay_alpha"))}
# EV pinning is read off the sender's EV set: the spine it pinned to, and how many of plane 0's
# EVs in the rotation start on it (ev_count 24 over 2 planes: 12 per plane).
READERS["mrc.qp"]["ev_pin_spine"] = (1, lambda w: w.qp.sender.evs.pin_spine)
READERS["mrc.qp"]["ev_pin_count"] = (9, lambda w: sum(
    1 for ev in w.qp.sender.evs.rotation
    if w.qp.sender.evs.evs[ev].plane == 0 and w.qp.sender.evs.evs[ev].spine == w.qp.sender.evs.pin_spine))
# RoCE's ACK timeout exponent is read as the interval the RoCE sender waits (4.096 us x 2^n).
READERS["mrc.qp"]["roce_ack_timeout"] = (
    14, lambda w: (w.qcfg.roce_ack_interval_ns // 4096).bit_length() - 1)
# NSCC's reference RTT is read off the Nscc object the sender consults.
READERS["mrc.qp"]["nscc_reference_rtt_ns"] = (24_000, lambda w: w.qp.sender.nscc.reference_rtt_ns)
# loss_policy is read off the policy object the sender actually consults, not the config field.
READERS["mrc.qp"]["loss_policy"] = (
    "tolerant", lambda w: {OcpLossPolicy: "ocp", TolerantLossPolicy: "tolerant"}.get(
        type(w.qp.sender.loss_policy), repr(w.qp.sender.loss_policy)))
# path_order_loss is read off the sender: off, it keeps no per-path order at all.
READERS["mrc.qp"]["path_order_loss"] = (False, lambda w: w.qp.sender.path_order is not None)
# [options] trimming turns the QPs' trimming flag on, which derives fabric_delay_bound_ns.
BASE_OPTIONS = "[options]\ntrimming = true\ncapture = false\n"
# Keys whose value changes what other keys of the same table can be read through; each runs in
# a scenario of its own. [mrc.endpoint] base_rtt_ns replaces the measurement that
# default_base_rtt_ns and rtt_probe_count are read through.
# [mrc.qp] ack_timeout and rto_ns both fix the base RTO, so the QP refuses the two together;
# roce_ack_timeout_ns wins over roce_ack_timeout.
SEPARATE = {("mrc.endpoint", "base_rtt_ns"), ("mrc.qp", "ack_timeout"),
            ("mrc.qp", "roce_ack_timeout")}
# Keys known not to reach their code yet, and what is missing. strict: once they do, the
# xfail fails, so the entry must go.
NOT_YET: dict = {}


def toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return repr(value)


# A broken key fails its test in seconds rather than after the default 60 s connect limit.
BASE_MRC = {"connect_timeout_s": 10.0}


def scenario_text(settings: dict[str, dict]) -> str:
    text = BASE + BASE_OPTIONS
    for table in ("mrc", "mrc.endpoint", "mrc.qp", "mrc.nscc"):
        values = {**(BASE_MRC if table == "mrc" else {}), **settings.get(table, {})}
        text += f"[{table}]\n"
        text += "".join(f"{k} = {toml_value(v)}\n" for k, v in values.items())
    return text


def run_world(text: str, tmp_path: Path, read) -> object:
    """Parse the scenario, build the worker config as the runner does, start both ranks'
    communicators through mrc_comm.create, return read(World of rank 0)."""
    scn = S.parse(text, source="plumbing.toml")
    config = runner.worker_config(scn, "mrc", tmp_path)
    spec = FabricSpec.from_dict(config.fabric)
    switch = FakeSwitch(spec)
    comms, errors = {}, []
    lock, done = threading.Lock(), threading.Event()

    def rank_main(rank):
        try:
            comm = create("mrc", rank, config,
                          ports={p: switch.port(rank, p) for p in range(spec.planes)})
        except Exception as exc:  # noqa: BLE001 - re-raised below
            errors.append(exc)
            done.set()
            return
        with lock:
            comms[rank] = comm
            if len(comms) == 2:
                done.set()
        # keep answering until the peer is connected too: it waits for our READY answer
        while not done.is_set():
            comm.ep.run_once(0.005)

    threads = [threading.Thread(target=rank_main, args=(r,)) for r in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    try:
        assert not any(t.is_alive() for t in threads), "a rank hung connecting"
        if errors:
            raise errors[0]
        return read(World(comms[0], switch))
    finally:
        for c in comms.values():
            c.linger_s = 0.0
            c.close()


def batches() -> list[dict[str, dict]]:
    """The keys grouped into as few scenarios as the readers allow: one for [mrc] and
    [mrc.endpoint] (endpoint timers feed the same MRCConfig fields that [mrc.qp] overrides),
    one for [mrc.qp], one per SEPARATE key."""
    keys = schema_keys()
    shared = {t: {k: READERS[t][k][0] for k in keys[t]
                  if k in READERS[t] and READERS[t][k][1] is not None and (t, k) not in SEPARATE}
              for t in ("mrc", "mrc.endpoint")}
    qp = {"mrc.qp": {k: READERS["mrc.qp"][k][0] for k in keys["mrc.qp"]
                     if k in READERS["mrc.qp"] and ("mrc.qp", k) not in SEPARATE}}
    nscc = {"mrc.nscc": {k: READERS["mrc.nscc"][k][0] for k in keys["mrc.nscc"]
                         if k in READERS["mrc.nscc"]}}
    return [shared, qp, nscc] + [{t: {k: READERS[t][k][0]}} for t, k in sorted(SEPARATE)]


@pytest.fixture(scope="module")
def applied(tmp_path_factory):
    """{(table, key): (value read with the key set, value read without it)}."""
    def read_all(settings):
        def read(w):
            return {(t, k): READERS[t][k][1](w) for t in settings for k in settings[t]}
        return read

    baseline_keys = {t: {k: None for k in ks if k in READERS[t] and READERS[t][k][1] is not None}
                     for t, ks in schema_keys().items()}
    default = run_world(scenario_text({}), tmp_path_factory.mktemp("base"), read_all(baseline_keys))
    out = {}
    for i, settings in enumerate(batches()):
        try:
            got = run_world(scenario_text(settings), tmp_path_factory.mktemp(f"b{i}"),
                            read_all(settings))
        except Exception as exc:  # noqa: BLE001 - each key's test re-raises it
            out.update({(t, k): exc for t in settings for k in settings[t]})
            continue
        out.update({key: (value, default[key]) for key, value in got.items()})
    return out


def all_keys():
    return [(t, k) for t, ks in schema_keys().items() for k in ks]


def test_every_scenario_key_has_a_reader():
    missing = [f"[{t}] {k}" for t, k in all_keys() if k not in READERS[t]]
    assert not missing, (f"scenario key(s) with no reader here: {', '.join(missing)}; plumb "
                         f"them to the code they name and add a reader to READERS")


@pytest.mark.parametrize("table, key", [
    pytest.param(t, k, marks=[pytest.mark.xfail(strict=True, reason=NOT_YET[(t, k)])]
                 if (t, k) in NOT_YET else [])
    for t, k in all_keys() if READERS[t].get(k, (0, None))[1] is not None])
def test_key_reaches_the_code_it_names(applied, table, key):
    value = READERS[table][key][0]
    if isinstance(applied[(table, key)], Exception):
        raise applied[(table, key)]
    got, without = applied[(table, key)]
    assert without != value, f"[{table}] {key} = {value!r} is what the scenario gives anyway"
    if isinstance(value, float):
        assert got == pytest.approx(value, rel=1e-6), f"[{table}] {key} set to {value}, code has {got}"
    else:
        assert got == value, f"[{table}] {key} set to {value!r}, the code has {got!r}"


def test_connect_timeout_is_applied(tmp_path):
    """[mrc] connect_timeout_s: rank 0 alone waits that long for its peer, then fails."""
    scn = S.parse(scenario_text({"mrc": {"connect_timeout_s": 0.5},
                                 "mrc.endpoint": {"base_rtt_ns": 3_000_000}}),
                  source="plumbing.toml")
    config = runner.worker_config(scn, "mrc", tmp_path)
    spec = FabricSpec.from_dict(config.fabric)
    switch = FakeSwitch(spec)
    start = time.monotonic()
    with pytest.raises(CommError, match="within 0.5 s"):
        create("mrc", 0, config, ports={p: switch.port(0, p) for p in range(spec.planes)})
    assert 0.5 <= time.monotonic() - start < 5.0      # the base scenario's is 10 s


def pinned(w) -> tuple:
    """(pin spine, EVs of plane 0 in the rotation on it) of rank 0's QP to rank 1."""
    evs = w.qp.sender.evs
    return evs.pin_spine, sum(1 for ev in evs.rotation
                              if evs.evs[ev].plane == 0 and evs.evs[ev].spine == evs.pin_spine)


HOST_QP = "[mrc.host_qp.{host}]\nev_pin_spine = 1\nev_pin_count = 12\n"


def test_a_hosts_qp_table_reaches_that_hosts_qps(tmp_path):
    """[mrc.host_qp.h0] applies over [mrc.qp] to rank 0 (host h0): 12 EVs per plane (ev_count
    24 over 2 planes), all pinned to spine 1, where [mrc.qp] pins 3 to spine 0."""
    text = scenario_text({"mrc.qp": {"ev_count": 24, "ev_pin_spine": 0, "ev_pin_count": 3}})
    assert run_world(text, tmp_path / "base", pinned) == (0, 3)
    assert run_world(text + HOST_QP.format(host="h0"), tmp_path / "h0", pinned) == (1, 12)


def test_another_hosts_qp_table_leaves_this_host_alone(tmp_path):
    text = scenario_text({"mrc.qp": {"ev_count": 24, "ev_pin_spine": 0, "ev_pin_count": 3}})
    assert run_world(text + HOST_QP.format(host="h1"), tmp_path, pinned) == (0, 3)
