"""Fabric-wide path monitor of a run: gathers every host's path-prober counts, names a lossy link
(controller/localize.py) and asks the controller to deny it.

Clustermapper runs an agent per node and localises centrally; here the agents are the endpoints'
path probers (traffic/core/path_prober.py, counts served on each endpoint's control socket as
"path_stats") and this thread, started by the runner for every MRC run, is the central part.
When it first reaches an endpoint it subscribes to its EV events (mrc_ctl.h's event mask, GOOD
and ASSUMED_BAD: traffic/core/ev_events.py); every `period_s` it forwards each endpoint's
events to the controller (POST /ev_events) and, when the scenario turns the probers on
(`localise`), reads all counts, localises from the probes and the ASSUMED_BAD events together
(controller/localize.py), and POSTs /deny {"link": ...} for each link it names (once). Every
decision is appended to `record_path` (JSONL) with the evidence behind it, and with what
each kind of evidence alone would have named (`probes_alone`, `ev_events_alone`).

`denial_summary` turns the controller's log of the run into the summary keys `denied` (what the
control plane denied) and `detection_ms` (from the first fault to the first denial).
"""
from __future__ import annotations

import json
import shutil
import tempfile
import threading
import time
from pathlib import Path

from analysis.jsonl import read_jsonl
from controller.client import ControllerClient, ControllerError
from controller.localize import locate
from emulation.network import control_secrets
from model import timescale
from model.events import ControllerLog
from model.topology import Topology, ev_spine
from traffic.nic.control import ControlClient
from traffic.core.ev_events import SUPPORTED_EVENT_MASK
from traffic.core.evs import ASSUMED_BAD
from traffic.core.path_prober import path_key, path_links
from traffic.workload.worker_config import WorkerConfig

# Thresholds of a lossy / clean path (controller/localize.py): a lossy link passes MIN_LOST
# losses within a few seconds of probing, while a healthy path of a busy run loses the odd
# probe (an answer held past the timeout by a stalled switch), which MIN_LOST keeps out.
MIN_LOST = 3
MIN_LOSS_RATE = 0.005
CLEAN_MIN_SENT = 40
MIN_PATHS = 2
# How often the monitor reads the counts, in emulated seconds: a lossy link is denied within a
# period or two of the probes' evidence. A dilated run polls k times less often on the wall
# clock (monitor_period_s), so the same evidence gathers between two polls.
PATH_MONITOR_PERIOD_S = 0.25


def monitor_period_s(k: float) -> float:
    """The monitor's poll period in the wall world of a run at time scale k."""
    return timescale.wall_time(PATH_MONITOR_PERIOD_S, k)


class PathMonitor(threading.Thread):
    def __init__(self, topo: Topology, sockets: dict[str, str], api_port: int, record_path: Path,
                 *, period_s: float = PATH_MONITOR_PERIOD_S, active=lambda: True,
                 localise: bool = True):
        super().__init__(daemon=True, name="path-monitor")
        self.topo = topo
        self.sockets = dict(sockets)
        self.api_port = api_port
        self.record_path = Path(record_path)
        self.period_s = period_s
        self.active = active
        self.localise = localise
        self.ev_losses: dict[str, int] = {}     # path -> ASSUMED_BAD events on it
        self.denied: list[dict] = []
        self.error: str | None = None
        self.stop_event = threading.Event()
        self._clients: dict = {}
        self._links: dict[str, frozenset] = {}
        self.ev_events_forwarded = 0
        self.ev_event_errors: list[str] = []

    def links_of(self, key: str) -> frozenset:
        links = self._links.get(key)
        if links is None:
            links = self._links[key] = frozenset(path_links(self.topo, key))
        return links

    def gather(self) -> dict[str, dict]:
        """Every reachable endpoint's counts; an endpoint not up (yet, or any more) is skipped.
        Its EV events are forwarded to the controller on the way."""
        stats = {}
        for host, path in self.sockets.items():
            client = self._clients.get(host)
            try:
                if client is None:
                    client = ControlClient(path, timeout_s=5.0)
                    client.call("ev_subscribe", mask=SUPPORTED_EVENT_MASK)
                    self._clients[host] = client
                if self.localise:
                    stats.update(client.call("path_stats")["paths"])
                events = client.call("ev_events").get("events", [])
            except (OSError, ValueError, ConnectionError):
                if client is not None:
                    client.close()
                self._clients.pop(host, None)
                continue
            if events:
                self.forward_ev_events(host, events)
                self.count_ev_losses(host, events)
        return stats

    def count_ev_losses(self, host: str, events: list) -> None:
        """Each event into ASSUMED_BAD is a loss the data saw on its QP's path (the EV's plane
        and spine to the event's peer)."""
        src = self.topo.host(host).index
        for e in events:
            try:
                if e.get("new") != ASSUMED_BAD or "peer" not in e:
                    continue
                peer = int(e["peer"])
                # inside a group the spine does not change the path: the prober's spine 0
                spine = (0 if self.topo.host(peer).group == self.topo.host(src).group
                         else ev_spine(int(e["ev"])))
                key = path_key(src, peer, int(e["plane"]), spine)
                self.links_of(key)
            except (KeyError, TypeError, ValueError):
                continue                # not a path of this fabric: no evidence
            self.ev_losses[key] = self.ev_losses.get(key, 0) + 1

    def forward_ev_events(self, host: str, events: list) -> None:
        try:
            ControllerClient(port=self.api_port).ev_events(host, events)
            self.ev_events_forwarded += len(events)
        except ControllerError as err:
            self.ev_event_errors.append(str(err))

    def locate(self, stats: dict, ev_losses: dict, judged_min_sent: int = CLEAN_MIN_SENT):
        """A link is judged only once every probe path over it could have cleared it."""
        paths = {k: self.links_of(k) for k in (*stats, *ev_losses)}
        return locate(stats, paths, min_lost=MIN_LOST, min_loss_rate=MIN_LOSS_RATE,
                      clean_min_sent=CLEAN_MIN_SENT, min_paths=MIN_PATHS, ev_losses=ev_losses,
                      judged_min_sent=judged_min_sent)

    def step(self) -> None:
        stats = self.gather()
        if not self.localise or not stats:
            return
        ev_losses = dict(self.ev_losses)
        found = self.locate(stats, ev_losses)
        done = {d["link"] for d in self.denied}
        for link in found.links:
            if link in done:
                continue
            paths = found.explained[link]
            asked = time.monotonic_ns()
            record = {"t_ns": asked, "link": link, "lossy_paths": paths,
                      "evidence": {p: {**stats.get(p, {"sent": 0, "lost": 0}),
                                       "ev_events": ev_losses.get(p, 0)} for p in paths},
                      "probes_alone": self.locate(stats, {}).links,
                      "ev_events_alone": self.locate(
                          {p: {"sent": 0, "lost": 0} for p in stats}, ev_losses, 0).links,
                      "clean_paths": len(found.clean_paths), "all_paths": stats,
                      "ev_losses": ev_losses}
            try:
                answer = ControllerClient(port=self.api_port).deny(
                    {"link": link, "reason": f"path prober: {len(paths)} lossy paths share it"})
                record.update(ok=True, deny_t_ns=answer.get("t_ns"))
            except ControllerError as err:
                record.update(ok=False, error=str(err))
            self.denied.append(record)
            with open(self.record_path, "a") as f:
                f.write(json.dumps(record) + "\n")

    def run(self) -> None:
        try:
            while not self.stop_event.wait(self.period_s):
                if self.active():
                    self.step()
        except Exception as exc:  # noqa: BLE001 - reported in the summary, never kills the run
            self.error = f"path monitor failed: {type(exc).__name__}: {exc}"
        finally:
            for client in self._clients.values():
                client.close()

    def stop(self) -> None:
        self.stop_event.set()
        self.join(10)


def denial_summary(controller_log: list[dict], applied: list[dict]) -> dict:
    """{"denied": [what was denied, in order], "detection_ms": first denial after the first
    applied fault, minus that fault's time (None without either)}."""
    denies = sorted((e for e in controller_log if e.get("action") == ControllerLog.DENY),
                    key=lambda e: e["t_ns"])
    faults = sorted(a["t_ns"] for a in applied if a.get("ok"))
    detection = None
    if faults:
        after = [e["t_ns"] for e in denies if e["t_ns"] >= faults[0]]
        if after:
            detection = (after[0] - faults[0]) / 1e6
    return {"denied": [{**e.get("rule", {}), "t_ns": e["t_ns"], "reason": e.get("reason", "")}
                       for e in denies],
            "detection_ms": detection}


def run_denials(controller_log: Path, applied: list[dict]) -> dict:
    """denial_summary of a run directory's copy of the controller log (missing: no denial;
    a line cut by a crash is skipped)."""
    entries = read_jsonl(controller_log, [])
    return denial_summary([e for e in entries if isinstance(e, dict) and "t_ns" in e], applied)


__all__ = ["PathMonitor", "denial_summary", "run_denials"]


class RunControlPlane:
    """What a run needs of the control plane: a short directory for the endpoints' control
    sockets (a unix socket path must fit 108 bytes; run directories can be longer), their
    registration with the controller, and the path monitor: it forwards the endpoints' EV
    events in every MRC run and localises when the scenario turns the probers on
    ([mrc.endpoint] path_probe_interval_ms > 0)."""

    def __init__(self, scn, transport: str, worker_config: WorkerConfig, tdir: Path):
        self.topo = scn.topology
        self.period_s = monitor_period_s(float(scn.time_scale))
        self.tdir = Path(tdir)
        self.enabled = transport == "mrc"
        endpoint = (scn.mrc or {}).get("endpoint") or {}
        self.probing = self.enabled and float(endpoint.get("path_probe_interval_ms", 0)) > 0
        self.dir = None
        self.monitor: PathMonitor | None = None
        if self.enabled:
            # inside the fabric's endpoint directory: the only sockets the controller takes
            self.dir = Path(tempfile.mkdtemp(prefix="run-", dir=control_secrets.ensure_private_dir(
                control_secrets.ENDPOINT_DIR)))
            worker_config.control_dir = str(self.dir)

    def sockets(self) -> dict[str, str]:
        return {h.name: str(self.dir / f"{h.name}.sock") for h in self.topo.hosts}

    def start(self, api_port: int, active) -> None:
        if not self.enabled:
            return
        ControllerClient(port=api_port).register_endpoints(self.sockets())
        self.monitor = PathMonitor(self.topo, self.sockets(), api_port,
                                   self.tdir / "path-monitor.jsonl", period_s=self.period_s,
                                   active=active, localise=self.probing)
        self.monitor.start()

    def stop(self) -> str | None:
        """Stop the monitor, remove the socket directory; the monitor's error, if any."""
        error = None
        if self.monitor is not None:
            self.monitor.stop()
            error = self.monitor.error
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
        return error
