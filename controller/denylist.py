"""The controller's denylist: validate deny/allow commands, keep the rules in force, push them to
every endpoint registered with the controller (through the endpoint's control socket).

The endpoints, not the switches, act on a denial (MRC routes at the source): each endpoint gets
the whole rule set ({"op": "denylist", "rules": [...]}, traffic/nic/control.py) so a repeated or
late push converges to the same state, and an endpoint that registers later gets the current set.
A push to an endpoint that is gone or not up yet is reported per host, never raised: the rule
stays in force and reaches it with the next push.

A slow or dead endpoint costs at most one PUSH_TIMEOUT_S: every push goes to all endpoints at
once (a thread each), outside the lock that guards the rules, so GET /denylist never waits for
an endpoint. Pushes are serialized among themselves and each sends the rule set current when it
starts, so the last push delivers the newest rules whatever the order the calls came in.
Sockets are taken only inside the fabric's own endpoint directory (root-only, made by the
fabric), so no caller can make the controller connect to a socket of its choosing.
"""
from __future__ import annotations

import os
import stat
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from model.topology import Topology
from traffic.nic.control import ControlClient, ControlError
from traffic.core.denylist import Denylist, DenyRuleError, parse_rule

PUSH_TIMEOUT_S = 2.0
MAX_PUSH_THREADS = 64
MAX_REASON_CHARS = 200       # a deny's reason is a note kept in the history and echoed back


def inside_dir(path: str, directory: str) -> bool:
    """True when `path` names an entry below `directory` with no link and no '..' on the way,
    and the entry itself, if it exists yet, is a socket (not a link: a link there could point
    the controller at any file or socket of the machine)."""
    if not isinstance(path, str) or not os.path.isabs(path) or "\0" in path:
        return False
    norm = os.path.normpath(path)
    if norm != path.rstrip("/") or os.path.realpath(os.path.dirname(norm)) != os.path.dirname(norm):
        return False
    root = os.path.realpath(directory)
    if os.path.commonpath([norm, root]) != root or norm == root:
        return False
    try:
        mode = os.lstat(norm).st_mode
    except FileNotFoundError:
        return True                  # registered before the endpoint made its socket
    except OSError:
        return False
    return stat.S_ISSOCK(mode)


class DenylistService:
    """`socket_dir`: the only directory whose sockets are taken (None: any absolute path, for
    tests without a fabric)."""

    def __init__(self, topo: Topology, clock=time.monotonic_ns,
                 push_timeout_s: float = PUSH_TIMEOUT_S, socket_dir: str | None = None):
        self.topo = topo
        self.clock = clock
        self.push_timeout_s = push_timeout_s
        self.socket_dir = socket_dir
        self.rules = Denylist(topo)
        self.endpoints: dict[str, str] = {}        # host name -> control socket path
        self.history: list[dict] = []
        self.lock = threading.Lock()               # the rules, endpoints and history
        self.push_lock = threading.Lock()          # one push at a time (never held with lock)

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
                raise ValueError(f"control socket of {name} must be an absolute path, got "
                                 f"{repr(path)[:80]}")
            if self.socket_dir is not None and not inside_dir(path, self.socket_dir):
                raise ValueError(f"control socket of {name} must be a socket inside the fabric's "
                                 f"endpoint directory {self.socket_dir} (no '..', no link), got "
                                 f"{repr(path)[:80]}")
            clean[name] = path
        with self.lock:
            self.endpoints.update(clean)
            any_rules = bool(self.rules.rules)
        pushed = self._push(sorted(clean)) if any_rules else {}
        with self.lock:
            endpoints = sorted(self.endpoints)
        return {"ok": True, "endpoints": endpoints, "pushed": pushed}

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
            raise DenyRuleError(f"{action}: reason must be a string, got {repr(reason)[:80]}")
        if len(reason) > MAX_REASON_CHARS:
            raise DenyRuleError(f"{action}: reason must be at most {MAX_REASON_CHARS} characters, "
                                f"got {len(reason)}")
        try:
            rule = parse_rule(command, self.topo)
        except DenyRuleError as err:
            raise DenyRuleError(f"{action}: {err}") from None
        with self.lock:
            stranded = self.rules.stranded_by(rule) if add else None
            if stranded is not None:
                src, dst = (self.topo.host(i).name for i in stranded)
                raise DenyRuleError(f"deny: refused: {rule.describe()} with the rules in force "
                                    f"would leave {src} no path to {dst}; allow a rule first")
            if add:
                _, changed = self.rules.add(rule)
            else:
                _, changed = self.rules.remove(rule)
            t_ns = self.clock()
            hosts = sorted(self.endpoints)
        pushed = self._push(hosts)
        entry = {"t_ns": t_ns, "action": action, "rule": rule.to_dict(),
                 "what": rule.describe(), "changed": changed, "reason": reason,
                 "pushed": pushed}
        with self.lock:
            self.history.append(entry)
            rules = self.rules.to_list()
        return {"ok": True, **entry, "rules": rules}

    def _push(self, hosts) -> dict:
        """Send the current rule set to `hosts`, all at once; {host: evs denied there, or the
        error}. Call without self.lock held."""
        with self.push_lock:
            with self.lock:
                rules = self.rules.to_list()
                paths = {host: self.endpoints[host] for host in hosts}
            if not paths:
                return {}
            with ThreadPoolExecutor(min(MAX_PUSH_THREADS, len(paths)),
                                    thread_name_prefix="denylist-push") as pool:
                futures = {host: pool.submit(self._push_one, path, rules)
                           for host, path in paths.items()}
                return {host: futures[host].result() for host in sorted(futures)}

    def _push_one(self, path: str, rules: list) -> dict:
        if not os.path.exists(path):
            return {"ok": False, "error": f"no control socket at {path} (endpoint not up)"}
        try:
            client = ControlClient(path, timeout_s=self.push_timeout_s)
            try:
                reply = client.call("denylist", rules=rules)
            finally:
                client.close()
            return {"ok": True, "evs_denied": reply.get("evs_denied"),
                    "newly_denied": reply.get("newly_denied"),
                    "newly_allowed": reply.get("newly_allowed")}
        except (OSError, ControlError, ConnectionError, ValueError) as err:
            return {"ok": False, "error": f"{type(err).__name__}: {str(err)[:200]}"}


__all__ = ["DenylistService"]
