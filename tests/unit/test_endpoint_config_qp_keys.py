"""EndpointConfig refuses what the QP cannot take, at validation, naming the key."""
import pytest

from traffic.endpoint import Endpoint
from traffic.endpoint_support import ConfigError, EndpointConfig


def test_unknown_qp_setting_is_named():
    with pytest.raises(ConfigError, match="unknown QP setting.*no_such_knob"):
        EndpointConfig.from_dict({"host": 0, "qp": {"no_such_knob": 1}})


@pytest.mark.parametrize("name", EndpointConfig.QP_NS_OVERRIDES)
def test_fixed_time_override_reaches_the_qp_config_or_is_refused(name):
    """Never accepted and then dropped: either MRCConfig carries the value, or the config is
    refused with an error naming the key and the *_rtts key to use instead."""
    try:
        cfg = EndpointConfig.from_dict({"host": 0, name: 1_234_567})
    except ConfigError as exc:
        assert name in str(exc) and name.replace("_ns", "_rtts") in str(exc)
        return
    qp_cfg = Endpoint(cfg, ports={}).qp_config(3_000_000)
    assert getattr(qp_cfg, name) == 1_234_567
