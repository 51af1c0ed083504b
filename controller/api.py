"""HTTP/JSON command API of the controller (stdlib only, 127.0.0.1 only).

Every request must carry the fabric's token (controller.api_auth; else 401, nothing done) and
every POST must say `Content-Type: application/json` (else 415: a browser's form post cannot
say that without a CORS preflight this server never answers).
The server knows nothing about OpenFlow: it parses requests, calls a backend object
(controller.service.FabricController) and maps its exceptions to HTTP codes:
  FaultError / ValueError / KeyError (bad input, nothing changed) -> 400
    (including a body shorter than its Content-Length: the read times out, 400, not a hang)
  CommandError (a tc/ip/nft command failed)                       -> 500 with its stderr
  TimeoutError (a switch did not answer)                          -> 504
  anything else                                                   -> 500 (the controller lives on)
"""
from __future__ import annotations

import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from controller import api_auth
from controller.faults import FaultError
from model.clip import clip_values

LOG = logging.getLogger("mrclab.api")
# POST /hosts of a 16k-host fabric is ~0.4 MB ({"h16383": 4194304, ...}); fault commands are tiny.
MAX_BODY = 1 << 20
# A client that announces more body than it sends would otherwise hold a handler thread forever.
REQUEST_TIMEOUT_S = 5.0


class CommandError(RuntimeError):
    """An external command (ip, tc, nft, nsenter) failed; the message has argv and stderr."""


def _json_bytes(obj) -> bytes:
    return (json.dumps(obj, sort_keys=True) + "\n").encode()


class _Handler(BaseHTTPRequestHandler):
    server_version = "mrclab-controller/1"
    backend = None  # set per server class
    token = ""      # set per server class: the fabric's API secret
    timeout = REQUEST_TIMEOUT_S   # socket timeout of every read (StreamRequestHandler applies it)

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
        self._reply(status, {"ok": False, "error": clip_values(message)})

    def _body(self):
        text = self.headers.get("Content-Length")
        if text is None:
            raise ValueError("request has no Content-Length header; send the JSON body with one")
        try:
            length = int(text)
        except ValueError:
            raise ValueError(f"bad Content-Length {text!r}: not an integer") from None
        if length < 0:
            raise ValueError(f"bad Content-Length {length}: negative")
        if length > MAX_BODY:
            self.close_connection = True          # the unread body must not become a request
            raise ValueError(f"request body too large ({length} bytes; at most {MAX_BODY})")
        try:
            raw = self.rfile.read(length) if length else b""
        except TimeoutError:
            self.close_connection = True
            raise ValueError(f"request body shorter than its Content-Length {length}: nothing "
                             f"more arrived within {self.timeout} s") from None
        if len(raw) < length:
            self.close_connection = True
            raise ValueError(f"request body shorter than its Content-Length {length}: got "
                             f"{len(raw)} bytes before the connection closed")
        try:
            return json.loads(raw or b"null")
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as err:
            raise ValueError(f"request body is not valid JSON: {err}") from None

    def _refused(self, method: str) -> bool:
        """Answer 401 / 415 and return True unless the request is authenticated JSON."""
        if not api_auth.authorized(self.headers.get(api_auth.HEADER), self.token):
            self.close_connection = True
            self._error(401, "unauthenticated: send the fabric's API token as "
                             f"'{api_auth.HEADER}: {api_auth.SCHEME}<token>' (root reads it from "
                             f"{api_auth.RUN_DIR}/api-token-<port>; see docs/security.md)")
            return True
        ctype = (self.headers.get("Content-Type") or "").split(";", 1)[0].strip().lower()
        if method == "POST" and ctype != "application/json":
            self.close_connection = True
            self._error(415, f"Content-Type must be application/json, got "
                             f"{ctype[:80] or 'none'}")
            return True
        return False

    def _dispatch(self, method: str) -> None:
        if self._refused(method):
            return
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
            ("POST", "/faults"): lambda: b.fault_batch(self._body()),
            ("POST", "/endpoints"): lambda: b.register_endpoints(self._body()),
            ("POST", "/deny"): lambda: b.deny(self._body()),
            ("POST", "/allow"): lambda: b.allow(self._body()),
            ("GET", "/denylist"): lambda: b.denylist_state(),
            ("POST", "/ev_events"): lambda: b.ev_events(self._body()),
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
    """ThreadingHTTPServer on 127.0.0.1:port serving `backend` to holders of `token`, in a
    daemon thread."""

    def __init__(self, backend, port: int, token: str, host: str = "127.0.0.1",
                 request_timeout_s: float = REQUEST_TIMEOUT_S):
        if not token or len(token) < 16:
            raise ValueError("the API needs a token of at least 16 characters")
        handler = type("Handler", (_Handler,), {"backend": backend, "timeout": request_timeout_s,
                                                "token": token})
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
