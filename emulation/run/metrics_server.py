"""The live counters of a running transport (emulation/run/live_state.py) on a Prometheus text
endpoint, http://127.0.0.1:<[options] metrics_port>/metrics, for as long as the transport runs.
Bound to loopback only (like Faucet's controller metrics): the counters are for this machine.
Loopback is not authentication (any local user can connect) and the counters are fetched from
the controller with the fabric's token, so a scrape must carry that same token (the API's rule,
docs/security.md): `Authorization: Bearer <token>`, in Prometheus `authorization:
{credentials_file: /run/mrclab/api-token-<api port>}`; without it the answer is 401. Every
request has REQUEST_TIMEOUT_S to arrive whole, so a client that connects and says nothing holds
a thread only that long.

A port already in use is a clear error when the run starts (MetricsPortError), never later."""
from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from controller import api_auth
from controller.client import ControllerClient
from emulation.run.live_state import Watcher

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
REQUEST_TIMEOUT_S = 5.0


class MetricsPortError(RuntimeError):
    """The metrics port cannot be bound (in use, or not allowed)."""


def controller_getter(api_port: int, timeout_s: float = 1.0):
    """GET <path> of the controller's API on 127.0.0.1 as parsed JSON, with the fabric's token
    (controller/client.py reads it; the API answers nobody without it)."""
    client = ControllerClient(port=api_port, timeout_s=timeout_s)

    return client.get


class MetricsServer:
    """`token`: the secret every request must carry as `Authorization: Bearer <token>`."""

    def __init__(self, port: int, watcher: Watcher, token: str):
        self.watcher = watcher
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            timeout = REQUEST_TIMEOUT_S          # StreamRequestHandler sets it on the socket

            def do_GET(self):   # noqa: N802 - http.server's name
                if not api_auth.authorized(self.headers.get("Authorization"), token):
                    self.send_error(401, "the fabric's API token is required (docs/security.md)")
                    return
                if self.path.split("?", 1)[0] != "/metrics":
                    self.send_error(404, "only /metrics is served")
                    return
                with server.lock:
                    body = server.watcher.poll().prometheus().encode()
                self.send_response(200)
                self.send_header("Content-Type", CONTENT_TYPE)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):   # the run's console is for the run
                pass

        try:
            self.httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        except OSError as exc:
            raise MetricsPortError(f"[options] metrics_port = {port}: cannot listen on "
                                   f"127.0.0.1:{port} ({exc.strerror or exc})") from None
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="metrics",
                                       daemon=True)

    def start(self) -> "MetricsServer":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(2)


def start(scn, transport: str, tdir: Path, api_port: int) -> MetricsServer | None:
    """The endpoint of one transport's run, or None when the scenario has no metrics_port."""
    if scn.metrics_port is None:
        return None
    watcher = Watcher(tdir, transport, scn.topology, controller_getter(api_port))
    token = api_auth.read_token(api_auth.token_path(api_port))
    return MetricsServer(scn.metrics_port, watcher, token).start()
