"""The transport defaults stated once in model/transport_defaults.py are the ones the endpoint,
the QP and the analysis use."""
from analysis import fidelity, retirements
from model.transport_defaults import MIN_BASE_RTT_NS, RTO_MAX_NS
from traffic.core.qp_config import MRCConfig
from traffic.nic.endpoint_support import EndpointConfig


def test_the_values():
    assert MIN_BASE_RTT_NS == 2_000_000
    assert RTO_MAX_NS == 1_000_000_000


def test_the_endpoint_and_the_qp_take_their_defaults_from_model():
    # the endpoint floors no QP's base RTT unless its config sets one
    assert EndpointConfig.__dataclass_fields__["min_base_rtt_ns"].default is None
    assert MRCConfig().rto_max_ns == RTO_MAX_NS


def test_the_analysis_reads_the_same_values():
    assert fidelity.default_min_base_rtt_ns() == MIN_BASE_RTT_NS
    assert retirements.DEFAULT_LOOKBACK_NS == RTO_MAX_NS


def test_a_run_without_qps_is_judged_against_the_fabrics_round_trip_when_known():
    """Kernel TCP logs no QP: its base RTT is the fabric's full-frame round trip (the facts
    the summary passes), the floor only when the fabric is unknown; a QP's own wins."""
    assert fidelity.base_rtt_ns({"h0": {"qp": []}}, 1_442_880) == (
        1_442_880, "the fabric's unloaded full-frame round trip (no QP logged one)")
    assert fidelity.base_rtt_ns({"h0": {"qp": []}})[0] == MIN_BASE_RTT_NS
    assert fidelity.base_rtt_ns({"h0": {"qp": [{"base_rtt_ns": 900_000}]}}, 1_442_880)[0] == 900_000
