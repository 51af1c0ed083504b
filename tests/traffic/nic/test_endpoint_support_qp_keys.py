"""EndpointConfig refuses what the QP cannot take, at validation, naming the key; each QP setting
has one name (MRCConfig's), in the config's qp table."""
import pytest

from traffic.nic.endpoint import Endpoint
from traffic.nic.endpoint_support import (
    EMULATED_FABRIC_QP_DEFAULTS,
    MOVED_TO_QP,
    QP_SETTINGS_FROM_THE_ENDPOINT,
    ConfigError,
    EndpointConfig,
)
from traffic.core.qp_config import MRCConfig


def test_unknown_qp_setting_is_named():
    with pytest.raises(ConfigError, match="unknown QP setting.*no_such_knob"):
        EndpointConfig.from_dict({"host": 0, "qp": {"no_such_knob": 1}})


def test_a_bad_qp_value_is_refused_at_validation_naming_the_key():
    with pytest.raises(ConfigError, match="qp: MRCConfig.retry_linear_count must be an integer"):
        EndpointConfig.from_dict({"host": 0, "qp": {"retry_linear_count": 9}})
    with pytest.raises(ConfigError, match="ev_min_active must be in 0..ev_count"):
        EndpointConfig.from_dict({"host": 0, "qp": {"ev_count": 32, "ev_min_active": 40}})


@pytest.mark.parametrize("name", sorted(QP_SETTINGS_FROM_THE_ENDPOINT))
def test_a_setting_the_endpoint_derives_is_refused_in_qp(name):
    with pytest.raises(ConfigError, match=f"qp: {name} is derived by the endpoint"):
        EndpointConfig.from_dict({"host": 0, "qp": {name: 1_000}})


@pytest.mark.parametrize("old", sorted(MOVED_TO_QP))
def test_a_qp_setting_at_the_top_level_is_refused_naming_its_qp_key(old):
    with pytest.raises(ConfigError) as exc:
        EndpointConfig.from_dict({"host": 0, old: 1})
    assert f"qp.{MOVED_TO_QP[old]}" in str(exc.value) and old in str(exc.value)
    assert MOVED_TO_QP[old].split()[0] in {f.name for f in MRCConfig.__dataclass_fields__.values()}


def test_qp_settings_apply_over_the_emulated_fabric_defaults():
    ep = Endpoint(EndpointConfig.from_dict({"host": 0, "min_base_rtt_ns": 3_000_000,
                                            "qp": {"rto_rtts": 7.0, "ack_every": 2}}),
                  ports={})
    qcfg = ep.qp_config(2_500_000)
    assert qcfg.rto_rtts == 7.0 and qcfg.ack_every == 2
    # values written by hand from the emulated fabric's table, not read from it
    # EV counts: None, one EV (and one backup) per path of the fabric (traffic/core/evs.py)
    assert (qcfg.ev_count, qcfg.ev_backup_count, qcfg.ack_delay_rtts) == (None, None, 0.25)
    assert qcfg.loss_verdict_ns == 300 * 10**6        # 300 ms, in the QP's unit
    assert (qcfg.reorder_rtts, qcfg.probe_timeout_rtts, qcfg.first_packet_grace) == (1.0, 16.0, True)
    assert qcfg.nscc_min_base_rtt_ns == 3_000_000 and qcfg.base_rtt_ns == 2_500_000
    assert set(EMULATED_FABRIC_QP_DEFAULTS) <= {f for f in MRCConfig.__dataclass_fields__}


def test_pacing_comes_from_the_endpoints_own_settings():
    """100 Mbit/s x 0.5 = 6.25 MB/s per plane; the burst is the endpoint's."""
    ep = Endpoint(EndpointConfig.from_dict({"host": 0, "port_rate_mbit": 100.0,
                                            "pacing_fraction": 0.5, "pacing_burst_packets": 7}),
                  ports={})
    qcfg = ep.qp_config(1_000_000)
    assert qcfg.port_rate_Bps == pytest.approx(6.25e6) and qcfg.pacing_burst_packets == 7


@pytest.mark.parametrize("routing, asked, expected", [
    ("srv6", None, True), ("srv6", False, False), ("ecmp", None, False), ("ecmp", True, False)])
def test_loss_by_path_order_only_where_the_ev_names_its_path(routing, asked, expected):
    """SRv6: an EV's bits are its (plane, spine), a FIFO path; ECMP: a hash bucket's, which a
    reroute moves, so path order would take reordering for loss (traffic/core/path_order.py)."""
    qp = {} if asked is None else {"path_order_loss": asked}
    ep = Endpoint(EndpointConfig.from_dict({"host": 0, "routing": routing, "qp": qp}), ports={})
    assert ep.qp_config(2_500_000).path_order_loss is expected
