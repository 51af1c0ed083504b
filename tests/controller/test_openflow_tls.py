"""The OpenFlow channel's TLS socket under os-ken's two-threads-per-connection use: one thread
reading, another writing, one TLS connection, over the loopback. OpenSSL does not allow the two
at once (ssl.SSLSocket itself then now and then shows the reader a false end of stream); a
SerializedSSLSocket must deliver every byte, twelve connections in a row."""
import select
import socket
import ssl
import subprocess
import threading

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
    assert ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).sslsocket_class is SerializedSSLSocket
