"""The OpenFlow channel's TLS socket under os-ken's two-threads-per-connection use: one thread
reading, another writing, one TLS connection, over the loopback. With ssl.SSLSocket itself the
reader now and then sees a spurious end of stream; with SerializedSSLSocket never, so twelve
runs in a row must all deliver every byte. Then the listener's handshake: its bounds in time and
number, and the switch role the peer's certificate must name."""
import select
import socket
import ssl
import subprocess
import threading
import time

import pytest

from controller.openflow_tls import SerializedSSLSocket

MESSAGES = 20000
MESSAGE = b"x" * 90          # about a port-stats request's size


@pytest.fixture(scope="module")
def cert(tmp_path_factory):
    d = tmp_path_factory.mktemp("tls")
    key, crt = d / "key.pem", d / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", str(key), "-out",
                    str(crt), "-subj", "/CN=mrclab-test", "-days", "1"],
                   check=True, capture_output=True)
    return str(crt), str(key)


def _switch_side(port: int, total_in: int, count_out: int) -> None:
    """The peer, as a switch's event loop is: one thread, non-blocking, reading and writing."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    with ctx.wrap_socket(socket.create_connection(("127.0.0.1", port))) as c:
        c.setblocking(False)
        got = sent = 0
        while got < total_in or sent < count_out:
            readable, writable, _ = select.select([c], [c] if sent < count_out else [], [], 5)
            if not readable and not writable:
                return
            if readable:
                try:
                    data = c.recv(65536)
                except ssl.SSLWantReadError:
                    data = b"?"
                if not data:
                    return
                got += len(data) if data != b"?" else 0
            if writable:
                try:
                    c.send(MESSAGE)
                    sent += 1
                except ssl.SSLWantWriteError:
                    pass


def one_connection(cert, socket_class) -> tuple[int, list[str]]:
    """Bytes the controller side's reader received, and what went wrong, while its writer sent."""
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(*cert)
    server_ctx.sslsocket_class = socket_class
    total = MESSAGES * len(MESSAGE)
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        peer = threading.Thread(target=_switch_side,
                                args=(listener.getsockname()[1], total, MESSAGES), daemon=True)
        peer.start()
        raw, _ = listener.accept()
    conn = server_ctx.wrap_socket(raw, server_side=True)
    conn.settimeout(0.5)                 # as os-ken's socket_timeout makes its reads
    received, errors = [0], []

    def reader():
        while received[0] < total:
            try:
                data = conn.recv(8)      # os-ken reads an OpenFlow header first
            except (socket.timeout, ssl.SSLError):
                continue
            except OSError as err:
                errors.append(repr(err))
                return
            if not data:
                errors.append(f"end of stream after {received[0]} of {total} bytes")
                return
            received[0] += len(data)

    t = threading.Thread(target=reader)
    t.start()
    try:
        for _ in range(MESSAGES):
            conn.sendall(MESSAGE)
    except OSError as err:
        errors.append(f"send: {err!r}")
    t.join(30)
    conn.close()
    peer.join(5)
    return received[0], errors


def test_concurrent_reader_and_writer_never_see_a_false_end_of_stream(cert):
    for attempt in range(12):
        received, errors = one_connection(cert, SerializedSSLSocket)
        assert errors == [], f"connection {attempt + 1}: {errors}"
        assert received == MESSAGES * len(MESSAGE)


def test_serialize_tls_sockets_sets_the_class_every_context_uses(monkeypatch):
    from controller import openflow_tls
    monkeypatch.setattr(ssl.SSLContext, "sslsocket_class", ssl.SSLSocket)
    openflow_tls.serialize_tls_sockets()
    cls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).sslsocket_class
    assert issubclass(cls, SerializedSSLSocket) and cls.peer_cn == "mrclab switch"


# ---------------------------------------------------------------- the listener's handshake
# A fabric's own certificates (emulation/network/control_secrets.py's openssl commands): a CA,
# the controller's and the switches'; the listener is set up as os-ken sets up its own
# (certificate required, signed by the CA).


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    from emulation.network.control_secrets import OpenFlowPki, pki_argvs
    d = tmp_path_factory.mktemp("pki")
    for argv in pki_argvs(str(d)):
        subprocess.run(argv, check=True, capture_output=True)
    return OpenFlowPki.in_dir(str(d))


class Listener:
    """A TLS listener like os-ken's StreamServer: a thread per accepted connection doing the
    handshake in wrap_socket; records what each handshake ended in."""

    def __init__(self, pki, socket_class):
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(pki.controller_cert, pki.controller_key)
        self.ctx.verify_mode = ssl.CERT_REQUIRED
        self.ctx.load_verify_locations(pki.ca_cert)
        self.ctx.sslsocket_class = socket_class
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(256)
        self.port = self.sock.getsockname()[1]
        self.outcomes = []          # (seconds the handshake took, "ok" or the error)
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                raw, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(raw,), daemon=True).start()

    def _handle(self, raw):
        t0 = time.monotonic()
        try:
            conn = self.ctx.wrap_socket(raw, server_side=True)
        except OSError as err:
            self.outcomes.append((time.monotonic() - t0, str(err)))
            return
        self.outcomes.append((time.monotonic() - t0, "ok"))
        conn.close()

    def close(self):
        self.sock.close()


def _client(pki, cert, key):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.load_verify_locations(pki.ca_cert)
    ctx.load_cert_chain(cert, key)
    return ctx


def _wait_for(predicate, timeout_s=10.0):
    deadline = time.monotonic() + timeout_s
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.02)
    return predicate()


def test_the_switch_certificate_is_taken_the_controllers_own_is_refused(pki):
    """Both certificates are signed by the fabric's CA; only the switch role may connect."""
    from controller.openflow_tls import SwitchOnlySSLSocket
    listener = Listener(pki, SwitchOnlySSLSocket)
    try:
        for cert, key in ((pki.switch_cert, pki.switch_key),
                          (pki.controller_cert, pki.controller_key)):
            with socket.create_connection(("127.0.0.1", listener.port), timeout=5) as raw:
                try:
                    with _client(pki, cert, key).wrap_socket(raw) as c:
                        c.recv(1)             # TLS 1.3: the server's verdict arrives after
                except OSError:
                    pass
        assert _wait_for(lambda: len(listener.outcomes) == 2)
        (_, switch), (_, controller) = listener.outcomes
        assert switch == "ok"
        assert "'mrclab controller' is not 'mrclab switch'" in controller, controller
    finally:
        listener.close()


def test_a_silent_connection_is_dropped_after_the_handshake_timeout(pki, monkeypatch):
    from controller import openflow_tls
    monkeypatch.setattr(openflow_tls, "HANDSHAKE_TIMEOUT_S", 0.5)
    listener = Listener(pki, openflow_tls.SwitchOnlySSLSocket)
    try:
        with socket.create_connection(("127.0.0.1", listener.port)) as idle:
            assert _wait_for(lambda: listener.outcomes, 5.0), "the handshake never ended"
            took, outcome = listener.outcomes[0]
            assert outcome != "ok" and 0.4 <= took < 3.0, listener.outcomes
            idle.settimeout(5)
            assert idle.recv(1) == b""            # the listener closed it
    finally:
        listener.close()


def test_a_trickling_peer_cannot_stretch_the_handshake(pki, monkeypatch):
    """A byte every 0.2 s would renew a timeout counted per read forever; the handshake's is
    counted from its start, so it still ends at 0.5 s."""
    from controller import openflow_tls
    monkeypatch.setattr(openflow_tls, "HANDSHAKE_TIMEOUT_S", 0.5)
    listener = Listener(pki, openflow_tls.SwitchOnlySSLSocket)
    try:
        with socket.create_connection(("127.0.0.1", listener.port)) as slow:
            hello = b"\x16\x03\x01\x02\x00" + b"\x01" * 20   # a ClientHello record, never done
            for byte in hello:
                if listener.outcomes:
                    break
                try:
                    slow.send(bytes([byte]))
                except OSError:
                    break
                time.sleep(0.2)
            assert _wait_for(lambda: listener.outcomes, 5.0)
            took, outcome = listener.outcomes[0]
            assert outcome != "ok" and took < 1.5, listener.outcomes
    finally:
        listener.close()


def test_handshakes_beyond_the_cap_are_refused_at_once(pki, monkeypatch):
    from controller import openflow_tls
    monkeypatch.setattr(openflow_tls, "HANDSHAKE_TIMEOUT_S", 3.0)
    monkeypatch.setattr(openflow_tls, "_pending", threading.BoundedSemaphore(4))
    monkeypatch.setattr(openflow_tls, "MAX_PENDING_HANDSHAKES", 4)
    listener = Listener(pki, openflow_tls.SwitchOnlySSLSocket)
    idle = []
    try:
        for _ in range(4):
            idle.append(socket.create_connection(("127.0.0.1", listener.port)))
        time.sleep(0.3)                          # the four handshakes are waiting
        assert listener.outcomes == []
        idle.append(socket.create_connection(("127.0.0.1", listener.port)))
        assert _wait_for(lambda: listener.outcomes, 2.0)
        took, outcome = listener.outcomes[0]
        assert "more than 4 TLS handshakes in progress" in outcome and took < 1.0, outcome
        # the waiting ones time out and free their places: a switch gets in again
        assert _wait_for(lambda: len(listener.outcomes) == 5, 6.0)
        with socket.create_connection(("127.0.0.1", listener.port), timeout=5) as raw:
            with _client(pki, pki.switch_cert, pki.switch_key).wrap_socket(raw) as c:
                c.recv(1)
        assert _wait_for(lambda: len(listener.outcomes) == 6)
        assert listener.outcomes[-1][1] == "ok", listener.outcomes
    finally:
        for s in idle:
            s.close()
        listener.close()
