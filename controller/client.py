"""Client of the controller's HTTP/JSON API (urllib only): used by the CLI, the runner, tests."""
from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

from controller import api_auth


class ControllerError(RuntimeError):
    """The controller refused a request (status 400) or failed (5xx), or is unreachable."""

    def __init__(self, message: str, status: int | None = None, detail: str | None = None):
        super().__init__(message)
        self.status = status            # HTTP status; None when the controller is unreachable
        self.detail = detail or message  # the controller's own words, without the request line


class ControllerClient:
    """`token`: the fabric's API secret; None reads it (MRCLAB_API_TOKEN, else the root-only
    file of this port, controller.api_auth) at the first request."""

    def __init__(self, port: int = 8787, host: str = "127.0.0.1", timeout_s: float = 15.0,
                 token: str | None = None):
        self.base = f"http://{host}:{port}"
        self.port = port
        self.timeout_s = timeout_s
        self.token = token

    def _auth_header(self) -> str:
        if self.token is None:
            try:
                self.token = api_auth.read_token(api_auth.token_path(self.port))
            except api_auth.TokenError as err:
                raise ControllerError(str(err)) from None
        return api_auth.header_value(self.token)

    def _request(self, method: str, path: str, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json",
                                              api_auth.HEADER: self._auth_header()})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                return json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as err:
            raw = err.read()
            try:
                message = json.loads(raw).get("error") or raw.decode(errors="replace")
            except (ValueError, AttributeError):
                message = raw.decode(errors="replace") or str(err)
            raise ControllerError(f"{method} {path}: {message}", err.code, message) from None
        except (urllib.error.URLError, OSError) as err:
            raise ControllerError(f"controller at {self.base} unreachable ({method} {path}): "
                                  f"{getattr(err, 'reason', err)}") from None

    def get(self, path: str):
        """GET any path of the API as parsed JSON (live views read several)."""
        return self._request("GET", path)

    # -- endpoints

    def health(self) -> dict:
        return self._request("GET", "/health")

    def register_hosts(self, pids: dict) -> dict:
        """{"h0": pid of the host's shell, ...}: namespaces for host-side faults."""
        return self._request("POST", "/hosts", pids)

    def links(self) -> list:
        return self._request("GET", "/links")

    def fault(self, command: dict) -> dict:
        """POST /fault; returns {"ok", "t_ns", "fault"}; raises ControllerError on 400/500."""
        return self._request("POST", "/fault", command)

    def fault_batch(self, commands: list) -> dict:
        """POST /faults: nftables faults on many links as one transaction per namespace; returns
        {"ok", "t_ns", "faults"}; raises ControllerError on 400/500."""
        return self._request("POST", "/faults", commands)

    def register_endpoints(self, sockets: dict) -> dict:
        """{"h0": "/path/h0.sock", ...}: where the endpoints' control sockets are (denylist)."""
        return self._request("POST", "/endpoints", sockets)

    def deny(self, rule: dict) -> dict:
        """POST /deny {"link": "h1~t0p0g0"} (or plane, plane+t1, ev; optional reason)."""
        return self._request("POST", "/deny", rule)

    def allow(self, rule: dict) -> dict:
        return self._request("POST", "/allow", rule)

    def denylist(self) -> dict:
        return self._request("GET", "/denylist")

    def ev_events(self, host: str, events: list) -> dict:
        """POST /ev_events: one endpoint's EV state changes (traffic/core/ev_events.py)."""
        return self._request("POST", "/ev_events", {"host": host, "events": events})

    def faults(self) -> list:
        return self._request("GET", "/faults")

    def port_counters(self) -> dict:
        return self._request("GET", "/counters/ports")

    def flow_counters(self) -> dict:
        return self._request("GET", "/counters/flows")

    def trim_counters(self) -> dict:
        """{switch egress interface: {offered_packets, marked, trimmed, dropped, ...}} of the
        in-fabric trimming program ({} when the fabric runs without it)."""
        return self._request("GET", "/counters/trim")

    # -- conveniences

    def link_down(self, a: str, b: str) -> dict:
        return self.fault({"action": "link_down", "a": a, "b": b})

    def link_up(self, a: str, b: str) -> dict:
        return self.fault({"action": "link_up", "a": a, "b": b})

    def wait_ready(self, timeout_s: float = 30.0, poll_s: float = 0.1) -> dict:
        """Block until /health says ready (every switch connected, rules installed)."""
        deadline = time.monotonic() + timeout_s
        last = None
        while time.monotonic() < deadline:
            try:
                last = self.health()
                if last.get("ready"):
                    return last
            except ControllerError as err:
                last = str(err)
            time.sleep(poll_s)
        raise ControllerError(f"controller not ready after {timeout_s} s; last health: {last}")
