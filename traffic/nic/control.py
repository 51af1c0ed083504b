"""Local control interface of a running endpoint: a unix socket speaking JSON lines.

A runner or a user (`socat - UNIX-CONNECT:/run/...sock`) creates QPs, registers memory, posts
WRITEs and waits for completions without stopping the endpoint's loop: the server socket is one
more fd in the endpoint's poll set, and a "wait" is answered from the loop when it is satisfied.

Requests (one JSON object per line; every reply has "ok", errors carry "error"):
  {"op":"status"}                                     counters, QPs, ports, core (compiled?)
  {"op":"reg_mr","size":N,"rkey":K,"va":V}            -> {"rkey","va","size"}
  {"op":"create_qp","qpn":Q,"peer":H,"peer_qpn":P,"transport":"mrc"|"roce",["base_rtt_ns":n]}
  {"op":"post_write","qpn":Q,"size":N,"seed":S,"remote_va":V,"rkey":K,["imm":I]}
        payload = random.Random(S).randbytes(N) (JSON cannot carry MiBs), -> {"msn","sha256"}
  {"op":"wait","qpn":Q,"side":"send"|"recv","count":C,"timeout_s":T}
        -> {"completions":[{"msn","bytes","imm"}...]} once C completions are there (consumed)
  {"op":"digest","rkey":K,"offset":O,"size":N}        -> {"sha256"} of registered memory
  {"op":"denylist","rules":[{"link":"h1~t0p0g0"}, ...]}  the paths no QP may use (the whole
        set: EVs named become DENIED, EVs no longer named are allowed) -> {"rules",
        "newly_denied", "newly_allowed", "evs_denied"}; rules as traffic/core/denylist.py
  {"op":"path_stats"}                                 -> {"paths": {path: {"sent","lost"}}} of
        the path prober (traffic/core/path_prober.py; {} when it is off)
  {"op":"ev_subscribe","mask":M}                      -> {"mask"} monitor the EV states in M
        (mrc_ctl.h bits: GOOD 1, ASSUMED_BAD 2; 0: none) from now on
  {"op":"ev_events"}                                  -> {"events": [...]} the EV state changes
        not yet delivered, with drop counts (traffic/core/ev_events.py), removed from the queue
  {"op":"shutdown"}
"""
from __future__ import annotations

import hashlib
import json
import os
import random
import socket
import time

from traffic import compiled
from traffic.nic.endpoint_support import EndpointError

MAX_LINE = 1 << 16


class ControlError(ValueError):
    pass


def _int(req: dict, key: str, default=None, lo: int = 0, hi: int = (1 << 64) - 1) -> int:
    if key not in req:
        if default is None:
            raise ControlError(f"missing key {key!r}")
        return default
    v = req[key]
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise ControlError(f"{key} must be an integer in {lo}..{hi}, got {v!r}")
    return v


class ControlServer:
    def __init__(self, endpoint, path: str):
        self.ep = endpoint
        self.path = path
        if os.path.exists(path):
            os.unlink(path)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        self.sock.listen(8)
        self.sock.setblocking(False)
        self.clients: dict[int, tuple[socket.socket, bytearray]] = {}
        self.waits: list[tuple[socket.socket, dict, float]] = []
        self.shutdown_requested = False
        self._buffers: dict[int, bytearray] = {}      # keep posted payloads alive
        endpoint.add_fd(self.sock.fileno(), self._accept)
        endpoint.on_turn = self._check_waits

    def _accept(self) -> None:
        try:
            conn, _ = self.sock.accept()
        except BlockingIOError:
            return
        conn.setblocking(False)
        self.clients[conn.fileno()] = (conn, bytearray())
        self.ep.add_fd(conn.fileno(), lambda fd=conn.fileno(): self._readable(fd))

    def _drop(self, fd: int) -> None:
        conn, _ = self.clients.pop(fd, (None, None))
        self.ep.remove_fd(fd)
        self.waits = [w for w in self.waits if w[0] is not conn]
        if conn:
            conn.close()

    def _readable(self, fd: int) -> None:
        conn, buf = self.clients[fd]
        try:
            data = conn.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._drop(fd)
            return
        buf += data
        while b"\n" in buf:
            line, _, rest = bytes(buf).partition(b"\n")
            buf[:] = rest
            self._handle(conn, line)
        if len(buf) > MAX_LINE:
            self._reply(conn, {"ok": False, "error": "request line too long"})
            self._drop(fd)

    def _reply(self, conn, obj: dict) -> None:
        try:
            conn.setblocking(True)
            conn.sendall((json.dumps(obj) + "\n").encode())
            conn.setblocking(False)
        except OSError:
            pass

    def _handle(self, conn, line: bytes) -> None:
        try:
            req = json.loads(line)
            if not isinstance(req, dict):
                raise ControlError("request must be a JSON object")
            reply = self.execute(req, conn)
        except (ControlError, ValueError, KeyError, TypeError) as e:
            reply = {"ok": False, "error": str(e)}
        except Exception as e:  # noqa: BLE001 - a bad request must not stop the endpoint
            reply = {"ok": False, "error": f"{type(e).__name__}: {e}"}
        if reply is not None:
            self._reply(conn, reply)

    def execute(self, req: dict, conn=None):
        ep = self.ep
        op = req.get("op")
        try:
            if op == "status":
                return {"ok": True, "host": ep.host, "counters": ep.counters.as_dict(),
                        "core": compiled.status(),
                        "ports": {str(p): up for p, up in ep.port_up.items()},
                        "qps": {str(q): qp.stats() for q, qp in ep.qps.items()}}
            if op == "reg_mr":
                size = _int(req, "size", lo=1, hi=1 << 32)
                mr = ep.register_mr(bytearray(size), rkey=_int(req, "rkey", lo=1, hi=(1 << 32) - 1),
                                    va=_int(req, "va", 0))
                return {"ok": True, "rkey": mr.rkey, "va": mr.va, "size": size}
            if op == "create_qp":
                qp = ep.create_qp(_int(req, "qpn", hi=0xFFFFFF), _int(req, "peer", hi=4095),
                                  _int(req, "peer_qpn", hi=0xFFFFFF), req.get("transport", "mrc"),
                                  req.get("base_rtt_ns"))
                return {"ok": True, "qpn": qp.qpn, "base_rtt_ns": qp.base_rtt_ns}
            if op == "post_write":
                size = _int(req, "size", lo=0, hi=1 << 32)
                data = bytearray(random.Random(_int(req, "seed", 0)).randbytes(size))
                imm = req.get("imm")
                msn = ep.post_write(_int(req, "qpn", hi=0xFFFFFF), data, _int(req, "remote_va", 0),
                                    _int(req, "rkey", hi=(1 << 32) - 1),
                                    None if imm is None else _int(req, "imm", hi=(1 << 32) - 1))
                self._buffers[id(data)] = data
                return {"ok": True, "msn": msn, "sha256": hashlib.sha256(data).hexdigest()}
            if op == "wait":
                qpn = _int(req, "qpn", hi=0xFFFFFF)
                if qpn not in ep.qps:
                    raise ControlError(f"no QP {qpn:#x}")
                if req.get("side") not in ("send", "recv"):
                    raise ControlError("side must be 'send' or 'recv'")
                _int(req, "count", lo=1, hi=1 << 30)
                timeout = req.get("timeout_s", 30)
                if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
                    raise ControlError(f"timeout_s must be a positive number, got {timeout!r}")
                self.waits.append((conn, req, time.monotonic() + timeout))
                self._check_waits()
                return None
            if op == "digest":
                rkey = _int(req, "rkey", hi=(1 << 32) - 1)
                mr = ep.registry.regions.get(rkey)
                if mr is None:
                    raise ControlError(f"no memory region with rkey {rkey:#x}")
                off = _int(req, "offset", 0)
                size = _int(req, "size", mr.length - off)
                if off + size > mr.length:
                    raise ControlError(f"range {off}+{size} outside the region ({mr.length} bytes)")
                return {"ok": True, "sha256": hashlib.sha256(mr.buf[off:off + size]).hexdigest()}
            if op == "denylist":
                return {"ok": True, **ep.set_denylist(req.get("rules", []))}
            if op == "path_stats":
                return {"ok": True, "host": ep.host, "paths": ep.path_stats()}
            if op == "ev_subscribe":
                try:
                    return {"ok": True, "mask": ep.ev_events.subscribe(req.get("mask"))}
                except ValueError as e:
                    raise ControlError(str(e)) from None
            if op == "ev_events":
                return {"ok": True, "host": ep.host, "events": ep.ev_events.poll()}
            if op == "shutdown":
                self.shutdown_requested = True
                return {"ok": True}
        except EndpointError as e:
            raise ControlError(str(e)) from None
        raise ControlError(f"unknown op {op!r}; ops: status reg_mr create_qp post_write wait "
                           f"digest denylist path_stats ev_subscribe ev_events shutdown")

    def _check_waits(self) -> None:
        if not self.waits:
            return
        keep = []
        now = time.monotonic()
        for conn, req, deadline in self.waits:
            qp = self.ep.qps[req["qpn"]]
            comps = qp.send_completions if req["side"] == "send" else qp.recv_completions
            if len(comps) >= req["count"]:
                taken = comps[:req["count"]]
                del comps[:req["count"]]
                self._reply(conn, {"ok": True, "completions": [
                    {"msn": c.msn, "bytes": c.bytes, "imm": c.imm, "status": c.status}
                    for c in taken]})
            elif qp.error:
                self._reply(conn, {"ok": False, "error": f"QP {qp.qpn:#x} error: {qp.error}"})
            elif now >= deadline:
                self._reply(conn, {"ok": False, "error": f"wait timed out ({len(comps)} of "
                                                         f"{req['count']} completions)"})
            else:
                keep.append((conn, req, deadline))
        self.waits = keep

    def close(self) -> None:
        for fd in list(self.clients):
            self._drop(fd)
        self.ep.remove_fd(self.sock.fileno())
        self.sock.close()
        try:
            os.unlink(self.path)
        except OSError:
            pass


class ControlClient:
    """Blocking client for tests and runners."""

    def __init__(self, path: str, timeout_s: float = 60.0):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout_s)
        self.sock.connect(path)
        self._buf = b""

    def call(self, op: str, **kw) -> dict:
        self.sock.sendall((json.dumps({"op": op, **kw}) + "\n").encode())
        while b"\n" not in self._buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("endpoint closed the control socket")
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        reply = json.loads(line)
        if not reply.get("ok"):
            raise ControlError(f"{op}: {reply.get('error')}")
        return reply

    def close(self) -> None:
        self.sock.close()
