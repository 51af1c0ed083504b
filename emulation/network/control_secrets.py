"""The per-fabric secrets that make the control plane the fabric owner's alone (docs/security.md):

  /run/mrclab/api-token-<port>   0600  the HTTP API's token (controller.api_auth)
  /run/mrclab/of-pki/            0700  OpenFlow TLS: a CA made for this fabric, the controller's
                                       and the switches' keys and certificates signed by it; the
                                       CA's own key is deleted once both are signed, so no other
                                       certificate can ever be made for this fabric
  /run/mrclab/endpoints/         0700  the only directory whose sockets POST /endpoints takes

OpenFlow runs over TLS with client certificates required on both sides (os-ken's ctl_privkey /
ctl_cert / ca_certs, OVS's `ovs-vsctl set-ssl` and `ssl:` controller targets): a process that
does not hold the switch key cannot complete the handshake, so it can neither claim a dpid nor
displace the real switch's connection; the controller takes only the switch certificate's CN
(controller/openflow_tls.py), not its own. OVS's SSL setting is machine-wide: the fabric sets
it only when it is empty or a fabric's own, and empties it at teardown (foreign_ssl_error).
The argv builders are pure; create() runs them (openssl) as root.
"""
from __future__ import annotations

import os
import shutil
import stat
from dataclasses import dataclass

from controller import api_auth
from controller.openflow_tls import CONTROLLER_CN, SWITCH_CN
from model.proc import run_checked

RUN_DIR = api_auth.RUN_DIR
PKI_DIR = os.path.join(RUN_DIR, "of-pki")
ENDPOINT_DIR = os.path.join(RUN_DIR, "endpoints")
CERT_DAYS = 30


class SecretsError(RuntimeError):
    """A secret could not be made; the message says which step."""


@dataclass(frozen=True)
class OpenFlowPki:
    ca_cert: str
    controller_key: str
    controller_cert: str
    switch_key: str
    switch_cert: str

    @classmethod
    def in_dir(cls, d: str) -> "OpenFlowPki":
        j = lambda name: os.path.join(d, name)   # noqa: E731
        return cls(j("ca.pem"), j("controller.key"), j("controller.pem"), j("switch.key"),
                   j("switch.pem"))


def _key_and_csr_argv(key: str, csr: str, cn: str) -> list[str]:
    return ["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-keyout", key, "-out", csr, "-subj", f"/CN={cn}"]


def pki_argvs(d: str) -> list[list[str]]:
    """openssl commands making the CA and the two signed leaf certificates in directory d."""
    pki = OpenFlowPki.in_dir(d)
    ca_key = os.path.join(d, "ca.key")
    argvs = [["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
              "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", ca_key, "-out", pki.ca_cert,
              "-days", str(CERT_DAYS), "-subj", "/CN=mrclab fabric CA"]]
    for key, cert, cn in ((pki.controller_key, pki.controller_cert, CONTROLLER_CN),
                          (pki.switch_key, pki.switch_cert, SWITCH_CN)):
        csr = cert + ".csr"
        argvs.append(_key_and_csr_argv(key, csr, cn))
        argvs.append(["openssl", "x509", "-req", "-in", csr, "-CA", pki.ca_cert, "-CAkey", ca_key,
                      "-set_serial", str(int.from_bytes(os.urandom(8), "big")), "-days",
                      str(CERT_DAYS), "-out", cert])
    return argvs


def private_dir(path: str) -> str:
    """Make `path` afresh as a root-owned 0700 directory (never through a link)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    if st is not None:
        if stat.S_ISDIR(st.st_mode):
            shutil.rmtree(path)
        else:
            os.unlink(path)
    os.mkdir(path, 0o700)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise SecretsError(f"{path} is not a private directory of ours")
    return path


def ensure_private_dir(path: str) -> str:
    """`path` as a root-owned 0700 directory: created if missing, refused if it is a link, not a
    directory, someone else's, or open to others (its sockets would then not be ours)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise SecretsError(f"{path} must be a directory of uid {os.getuid()} with mode 0700 "
                           f"(found mode {stat.filemode(st.st_mode)}, uid {st.st_uid}); remove it")
    return path


def make_pki(d: str = PKI_DIR) -> OpenFlowPki:
    private_dir(d)
    old = os.umask(0o077)
    try:
        for argv in pki_argvs(d):
            run_checked(argv, timeout=30, what="making the fabric's OpenFlow certificates",
                        error=SecretsError)
    finally:
        os.umask(old)
    for name in os.listdir(d):
        if name == "ca.key" or name.endswith(".csr"):
            os.unlink(os.path.join(d, name))
    return OpenFlowPki.in_dir(d)


def ovs_ssl_argv(pki: OpenFlowPki) -> list[str]:
    """OVS's one SSL configuration (all bridges): the switches' key, certificate and our CA."""
    return ["ovs-vsctl", "--timeout=20", "set-ssl", pki.switch_key, pki.switch_cert, pki.ca_cert]


def ovs_get_ssl_argv() -> list[str]:
    return ["ovs-vsctl", "--timeout=20", "get-ssl"]


def parse_get_ssl(text: str) -> dict[str, str]:
    """`ovs-vsctl get-ssl`'s "Private key: <path>" lines as {"Private key": path, ...}; {} when
    OVS has no SSL configuration."""
    out = {}
    for line in text.splitlines():
        name, sep, value = line.partition(":")
        if sep and value.strip():
            out[name.strip()] = value.strip()
    return out


def foreign_ssl_error(current: dict[str, str], pki_dir: str = PKI_DIR) -> str | None:
    """Why the fabric must not replace OVS's SSL configuration, or None. OVS has one SSL
    configuration for every bridge of the machine (no narrower scope exists), so the fabric sets
    it only when there is none or it is a fabric's own (its files under pki_dir, left by a
    fabric that crashed); anything else belongs to someone else's bridges."""
    paths = [current.get(k) for k in ("Private key", "Certificate", "CA Certificate")]
    if not any(paths):
        return None
    root = pki_dir.rstrip("/") + "/"
    if all(p and p.startswith(root) and ".." not in p for p in paths):
        return None
    return (f"Open vSwitch already has an SSL configuration that is not MRC lab's (private key "
            f"{str(current.get('Private key'))[:120]}); it applies to every bridge of the "
            f"machine, so the fabric will not replace it: remove it (ovs-vsctl del-ssl) if "
            f"nothing uses it, or run the fabric on a machine whose OVS has none")


def ovs_del_ssl_argv() -> list[str]:
    return ["ovs-vsctl", "--timeout=20", "del-ssl"]


def controller_target(of_port: int) -> str:
    return f"ssl:127.0.0.1:{int(of_port)}"


def remove(api_port: int) -> None:
    """Teardown: the token, the certificates and the endpoint directory go with the fabric."""
    api_auth.remove_token(api_auth.token_path(api_port))
    shutil.rmtree(PKI_DIR, ignore_errors=True)
