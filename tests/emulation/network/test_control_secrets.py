"""The fabric's secrets: two leaf certificates of distinct roles from one CA whose key is gone,
and Open vSwitch's one (machine-wide) SSL setting taken only when it is free or a fabric's own
(the real PKI, made as root: tests/integration/test_control_plane_security.py)."""
import subprocess

import pytest

from emulation.network import control_secrets as CS

EMPTY = ""          # `ovs-vsctl get-ssl` with no SSL configuration prints nothing
OURS = ("Private key: /run/mrclab/of-pki/switch.key\nCertificate: /run/mrclab/of-pki/switch.pem\n"
        "CA Certificate: /run/mrclab/of-pki/ca.pem\nBootstrap: false\n")
THEIRS = ("Private key: /etc/openvswitch/sc-privkey.pem\n"
          "Certificate: /etc/openvswitch/sc-cert.pem\n"
          "CA Certificate: /etc/openvswitch/cacert.pem\nBootstrap: false\n")


def test_get_ssl_output_is_read_by_field():
    assert CS.parse_get_ssl(EMPTY) == {}
    assert CS.parse_get_ssl(OURS) == {
        "Private key": "/run/mrclab/of-pki/switch.key",
        "Certificate": "/run/mrclab/of-pki/switch.pem",
        "CA Certificate": "/run/mrclab/of-pki/ca.pem", "Bootstrap": "false"}


def test_an_empty_or_our_own_ssl_setting_may_be_replaced():
    assert CS.foreign_ssl_error(CS.parse_get_ssl(EMPTY)) is None
    assert CS.foreign_ssl_error(CS.parse_get_ssl(OURS)) is None


@pytest.mark.parametrize("text", [
    THEIRS,
    OURS.replace("/run/mrclab/of-pki/ca.pem", "/etc/openvswitch/cacert.pem"),  # one file not ours
    OURS.replace("/run/mrclab/of-pki/", "/run/mrclab/of-pki-other/"),        # a prefix, not ours
    OURS.replace("/run/mrclab/of-pki/switch.key", "/run/mrclab/of-pki/../../../etc/k.pem"),
])
def test_someone_elses_ssl_setting_is_refused_with_what_to_do(text):
    err = CS.foreign_ssl_error(CS.parse_get_ssl(text))
    assert err is not None and "not MRC lab's" in err and "ovs-vsctl del-ssl" in err, err


def test_the_two_leaf_certificates_name_their_roles(tmp_path):
    """The controller takes a peer only with the switch role's CN (controller/openflow_tls.py):
    the two certificates must differ in it."""
    for argv in CS.pki_argvs(str(tmp_path)):
        subprocess.run(argv, check=True, capture_output=True)
    pki = CS.OpenFlowPki.in_dir(str(tmp_path))

    def subject(cert):
        return subprocess.run(["openssl", "x509", "-noout", "-subject", "-in", cert], check=True,
                              capture_output=True, text=True).stdout
    assert "CN = mrclab switch" in subject(pki.switch_cert)
    assert "CN = mrclab controller" in subject(pki.controller_cert)
