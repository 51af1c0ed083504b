"""HTTP/JSON command API of the controller (stdlib only, 127.0.0.1 only).

The server knows nothing about OpenFlow: it parses requests, calls a backend object
(controller.app.FabricController) and maps its exceptions to HTTP codes:
  FaultError / ValueError / KeyError (bad input, nothing changed) -> 400
  CommandError (a tc/ip/nft command failed)                       -> 500 with its stderr
  TimeoutError (a switch did not answer)                          -> 504
  anything else                                                   -> 500 (the controller lives on)
"""
from __future__ import annotations

import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from controller.faults import FaultError

LOG = logging.getLogger("mrclab.api")
MAX_BODY = 1 << 20


class CommandError(RuntimeError):
    """An external command (ip, tc, nft, nsenter) failed; the message has argv and stderr."""


def _json_bytes(obj) -> bytes:
    return (json.dumps(obj, sort_keys=True) + "\n").encode()


class _Handler(BaseHTTPRequestHandler):
    server_version = "mrclab-controller/1"
    backend = None  # set per server class

    def log_message(self, fmt, *args):  # quiet: requests are frequent in tests
        LOG.debug("%s %s", self.address_string(), fmt % args)

    def _reply(self, status: int, obj) -> None:
        body = _json_bytes(obj)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _error(self, status: int, message: str) -> None:
        self._reply(status, {"ok": False, "error": message})

    def _body(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            raise ValueError(f"request body too large ({length} bytes)")
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw or b"null")
        except json.JSONDecodeError as err:
            raise ValueError(f"request body is not valid JSON: {err}") from None

    def _dispatch(self, method: str) -> None:
        path = self.path.split("?", 1)[0].rstrip("/") or "/"
        b = self.backend
        routes = {
            ("GET", "/health"): lambda: b.health(),
            ("GET", "/links"): lambda: b.links(),
            ("GET", "/faults"): lambda: b.faults(),
            ("GET", "/counters/ports"): lambda: b.port_counters(),
            ("GET", "/counters/flows"): lambda: b.flow_counters(),
            ("GET", "/counters/trim"): lambda: b.trim_counters(),
            ("POST", "/hosts"): lambda: b.register_hosts(self._body()),
            ("POST", "/fault"): lambda: b.fault(self._body()),
        }
        handler = routes.get((method, path))
        if handler is None:
            known = ", ".join(f"{m} {p}" for m, p in routes)
            self._error(404, f"no endpoint {method} {path}; endpoints: {known}")
            return
        try:
            result = handler()
        except (FaultError, ValueError, KeyError, TypeError) as err:
            msg = err.args[0] if isinstance(err, KeyError) and err.args else str(err)
            self._error(400, str(msg))
        except CommandError as err:
            self._error(500, str(err))
        except TimeoutError as err:
            self._error(504, str(err) or "timed out waiting for a switch")
        except Exception as err:  # never let one request kill the controller
            LOG.exception("internal error on %s %s", method, path)
            self._error(500, f"internal error: {type(err).__name__}: {err}")
        else:
            self._reply(200, result)

    def do_GET(self):
        self._dispatch("GET")

    def do_POST(self):
        self._dispatch("POST")


class ApiServer:
    """ThreadingHTTPServer on 127.0.0.1:port serving `backend`, in a daemon thread."""

    def __init__(self, backend, port: int, host: str = "127.0.0.1"):
        handler = type("Handler", (_Handler,), {"backend": backend})
        ThreadingHTTPServer.allow_reuse_address = True
        self.httpd = ThreadingHTTPServer((host, port), handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="mrclab-api",
                                       daemon=True)

    def start(self) -> "ApiServer":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
