"""The worker configuration shared by the runner (writer) and the workers (reader): what one
writes the other reads back unchanged, and a bad value is refused with its key and value named."""
import json

import pytest

from emulation.run import runner
from emulation.config import scenario as S
from tests.helpers.scenario_texts import SMALL_FABRIC
from traffic.workload.worker_config import MRCSettings, TcpSettings, WorkerConfig, WorkerConfigError

SCENARIO = 'name = "roundtrip"\n' + SMALL_FABRIC + """[collective]
kind = "incast"
message_bytes = 65536
iterations = 7
warmup = 1
qps_per_peer = 3
timeout_s = 12.5
incast_target = "h2"
victim = ["h0", "h3"]
[options]
goodput_interval_ms = 25
[mrc]
ring_bytes = 2097152
linger_s = 0.5
[mrc.endpoint]
path_probe_interval_ms = 20
[mrc.qp]
retry_exp_count = 12
"""

MINIMAL = {"transport": "mrc", "world_size": 4, "collective": "allreduce",
           "message_bytes": 1024, "iterations": 3, "log_dir": "/tmp/logs"}


@pytest.mark.parametrize("transport", ["mrc", "roce", "tcp"])
def test_what_the_runner_writes_the_worker_reads_back(tmp_path, transport):
    written = runner.worker_config(S.parse(SCENARIO), transport, tmp_path)
    written.control_dir = "/tmp/ctl"          # the control plane sets it before writing
    written.write(tmp_path / "worker.json")
    read = WorkerConfig.load(tmp_path / "worker.json")
    assert read == written
    assert read.to_dict() == json.loads((tmp_path / "worker.json").read_text())


def test_the_scenario_reaches_the_fields_the_worker_uses(tmp_path):
    """Values by hand from SCENARIO: 2 groups x 2 hosts are h0..h3, ranks 0..3."""
    cfg = runner.worker_config(S.parse(SCENARIO), "mrc", tmp_path)
    assert (cfg.transport, cfg.collective, cfg.world_size) == ("mrc", "incast", 4)
    assert cfg.hosts == ["h0", "h1", "h2", "h3"]
    assert (cfg.message_bytes, cfg.iterations, cfg.warmup, cfg.qps_per_peer) == (65536, 7, 1, 3)
    assert cfg.timeout_s == 12.5 and cfg.goodput_interval_ms == 25.0
    assert cfg.incast_target == 2 and cfg.victim == [0, 3]
    assert cfg.mrc == MRCSettings(ring_bytes=2097152, linger_s=0.5,
                                  endpoint={"path_probe_interval_ms": 20.0},
                                  qp={"retry_exp_count": 12})
    assert cfg.log_dir == str(tmp_path) and cfg.routing == "srv6"


def test_defaults_of_a_minimal_config():
    cfg = WorkerConfig.from_dict(MINIMAL)
    assert cfg.hosts == ["h0", "h1", "h2", "h3"]
    assert (cfg.warmup, cfg.qps_per_peer, cfg.timeout_s) == (0, 1, 60.0)
    assert (cfg.incast_target, cfg.victim, cfg.victim_only) == (0, None, False)
    assert cfg.mrc == MRCSettings() and cfg.tcp is None
    assert "tcp" not in cfg.to_dict()


@pytest.mark.parametrize("change, named", [
    ({"message_bytes": 6}, "message_bytes must be a positive multiple of 4"),
    ({"message_bytes": "1024"}, "message_bytes"),
    ({"transport": "udp"}, "transport must be one of mrc, roce, tcp, got 'udp'"),
    ({"collective": "broadcast"}, "collective must be one of"),
    ({"world_size": 0}, "world_size must be an integer >= 1, got 0"),
    ({"iterations": 2.5}, "iterations must be an integer >= 1, got 2.5"),
    ({"warmup": -1}, "warmup must be an integer >= 0, got -1"),
    ({"timeout_s": 0}, "timeout_s must be a positive number, got 0"),
    ({"goodput_interval_ms": float("nan")}, "goodput_interval_ms must be a positive number"),
    ({"qps_per_peer": True}, "qps_per_peer must be an integer >= 1, got True"),
    ({"hosts": ["h0", "h1"]}, "hosts must name each of the 4 ranks' hosts"),
    ({"incast_target": 4}, "incast_target must be a rank 0..3, got 4"),
    ({"victim": [1, 1]}, "victim must be [src rank, dst rank], two different ranks 0..3"),
    ({"victim": [0, 9]}, "victim must be"),
    ({"victim_only": "yes"}, "victim_only must be true or false, got 'yes'"),
    ({"routing": "ospf"}, "routing must be one of srv6, ecmp, got 'ospf'"),
    ({"iteration": 5}, "unknown key(s) iteration; known: transport"),
    ({"mrc": {"ring_byte": 4096}}, "mrc: unknown key(s) ring_byte"),
    ({"mrc": {"ring_bytes": 0}}, "mrc.ring_bytes must be an integer >= 1, got 0"),
    ({"mrc": {"linger_s": -1}}, "mrc.linger_s must be a number of seconds >= 0, got -1"),
    ({"mrc": {"qp": [1]}}, "mrc.qp must be a table of settings, got [1]"),
    ({"mrc": 3}, "mrc must be a table (JSON object), got 3"),
    ({"mrc": {"endpoint": {"goodput_interval_ms": 5}}},
     "mrc.endpoint cannot set goodput_interval_ms: the worker sets them from the config's "
     "goodput_interval_ms"),
    ({"transport": "tcp"}, "the tcp transport needs tcp.endpoints"),
    ({"transport": "tcp", "tcp": {"endpoints": [[["10.0.0.1", 70000]]] * 4}},
     "tcp.endpoints must list, per rank, one [address, port] per plane"),
    ({"transport": "tcp", "tcp": {"endpoints": [[["10.0.0.1", 4000]]]}},
     "tcp.endpoints must list one entry per rank (4)"),
    ({"transport": "tcp", "tcp": {"endpoints": [[["a", 1]]] * 4, "connect_timeout_s": -2}},
     "tcp.connect_timeout_s must be a positive number, got -2"),
])
def test_a_bad_value_is_refused_naming_its_key(change, named):
    with pytest.raises(WorkerConfigError) as exc:
        WorkerConfig.from_dict({**MINIMAL, **change})
    assert named in str(exc.value)


def test_missing_keys_are_named():
    data = {k: v for k, v in MINIMAL.items() if k not in ("iterations", "log_dir")}
    with pytest.raises(WorkerConfigError, match="missing key\\(s\\) iterations, log_dir"):
        WorkerConfig.from_dict(data)
    with pytest.raises(WorkerConfigError, match="must be a table"):
        WorkerConfig.from_dict(["not", "an", "object"])


def test_a_rank_without_a_host_is_refused():
    cfg = WorkerConfig.from_dict(MINIMAL)
    assert cfg.host(3) == "h3"
    with pytest.raises(WorkerConfigError, match="--rank 4 out of range for world_size 4"):
        cfg.host(4)


def test_load_names_the_file(tmp_path):
    bad = tmp_path / "worker.json"
    bad.write_text("{not json")
    with pytest.raises(WorkerConfigError, match=f"{bad} is not valid JSON"):
        WorkerConfig.load(bad)
    bad.write_text(json.dumps({**MINIMAL, "message_bytes": 10}))
    with pytest.raises(WorkerConfigError, match=f"{bad}: worker config: message_bytes"):
        WorkerConfig.load(bad)
    with pytest.raises(WorkerConfigError, match="cannot read worker config"):
        WorkerConfig.load(tmp_path / "absent.json")


def test_tcp_endpoints_round_trip_as_json_lists():
    cfg = WorkerConfig.from_dict({**MINIMAL, "transport": "tcp", "world_size": 2,
                                  "tcp": {"endpoints": [[("a", 1)], [("b", 2)]]}})
    assert cfg.tcp == TcpSettings(endpoints=[[["a", 1]], [["b", 2]]], connect_timeout_s=30.0)
    assert WorkerConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
