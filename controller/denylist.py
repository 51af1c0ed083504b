"""The controller's denylist: validate deny/allow commands, keep the rules in force, push them to
every endpoint registered with the controller (through the endpoint's control socket).

The endpoints, not the switches, act on a denial (MRC routes at the source): each endpoint gets
the whole rule set ({"op": "denylist", "rules": [...]}, traffic/control.py) so a repeated or
late push converges to the same state, and an endpoint that registers later gets the current set.
A push to an endpoint that is gone or not up yet is reported per host, never raised: the rule
stays in force and reaches it with the next push.
"""
from __future__ import annotations

import os
import threading
import time

from model.topology import Topology
from traffic.control import ControlClient, ControlError
from traffic.denylist import Denylist, DenyRuleError, parse_rule

PUSH_TIMEOUT_S = 5.0


class DenylistService:
    def __init__(self, topo: Topology, clock=time.monotonic_ns,
                 push_timeout_s: float = PUSH_TIMEOUT_S):
        self.topo = topo
        self.clock = clock
        self.push_timeout_s = push_timeout_s
        self.rules = Denylist(topo)
        self.endpoints: dict[str, str] = {}        # host name -> control socket path
        self.history: list[dict] = []
        self.lock = threading.Lock()

    def register(self, sockets) -> dict:
        """{"h0": "/path/h0.sock", ...}: the endpoints' control sockets. Registered endpoints
        get the current rules at once (those whose socket is already up)."""
        if not isinstance(sockets, dict) or not sockets:
            raise ValueError('POST /endpoints needs a JSON object {"h0": "/path/to/control.sock", '
                             '...}')
        clean = {}
        for name, path in sockets.items():
            try:
                self.topo.host(name)
            except KeyError as err:
                raise ValueError(err.args[0]) from None
            if not isinstance(path, str) or not path.startswith("/"):
                raise ValueError(f"control socket of {name} must be an absolute path, got {path!r}")
            clean[name] = path
        with self.lock:
            self.endpoints.update(clean)
            pushed = self._push(sorted(clean)) if self.rules.rules else {}
        return {"ok": True, "endpoints": sorted(self.endpoints), "pushed": pushed}

    def deny(self, command) -> dict:
        return self._change(command, add=True)

    def allow(self, command) -> dict:
        return self._change(command, add=False)

    def state(self) -> dict:
        with self.lock:
            return {"ok": True, "rules": self.rules.to_list(), "endpoints": dict(self.endpoints),
                    "history": list(self.history)}

    def _change(self, command, add: bool) -> dict:
        action = "deny" if add else "allow"
        if not isinstance(command, dict):
            raise DenyRuleError(f"{action}: the body must be a JSON object naming a path, e.g. "
                                f"{{\"link\": \"h1~t0p0g0\"}}, {{\"plane\": 0, \"t1\": 1}}, "
                                f"{{\"plane\": 1}} or {{\"ev\": 268484609}}")
        reason = command.get("reason", "")
        if not isinstance(reason, str):
            raise DenyRuleError(f"{action}: reason must be a string, got {reason!r}")
        try:
            rule = parse_rule(command, self.topo)
        except DenyRuleError as err:
            raise DenyRuleError(f"{action}: {err}") from None
        with self.lock:
            if add:
                _, changed = self.rules.add(rule)
            else:
                _, changed = self.rules.remove(rule)
            t_ns = self.clock()
            pushed = self._push(sorted(self.endpoints))
            entry = {"t_ns": t_ns, "action": action, "rule": rule.to_dict(),
                     "what": rule.describe(), "changed": changed, "reason": reason,
                     "pushed": pushed}
            self.history.append(entry)
        return {"ok": True, **entry, "rules": self.rules.to_list()}

    def _push(self, hosts) -> dict:
        """Send the whole rule set to `hosts`; {host: evs denied there, or the error}."""
        rules = self.rules.to_list()
        out = {}
        for host in hosts:
            path = self.endpoints[host]
            if not os.path.exists(path):
                out[host] = {"ok": False, "error": f"no control socket at {path} (endpoint not up)"}
                continue
            try:
                client = ControlClient(path, timeout_s=self.push_timeout_s)
                try:
                    reply = client.call("denylist", rules=rules)
                finally:
                    client.close()
                out[host] = {"ok": True, "evs_denied": reply.get("evs_denied"),
                             "newly_denied": reply.get("newly_denied"),
                             "newly_allowed": reply.get("newly_allowed")}
            except (OSError, ControlError, ConnectionError, ValueError) as err:
                out[host] = {"ok": False, "error": f"{type(err).__name__}: {err}"}
        return out


__all__ = ["DenylistService"]
