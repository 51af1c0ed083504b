"""The live state of a running experiment, from its transport directory's logs: what `mrclab top`
shows and the Prometheus endpoint (`[options] metrics_port`) serves.

Inputs, followed as they grow (complete lines only):
    worker-h<n>.jsonl      goodput {rx_bytes, retransmits}, iteration
    endpoint-h<n>.jsonl    ev_state {qp, ev, new}, ev_suspect / ev_cleared, retransmit (MRC and
                           RoCE endpoints; its own goodput samples are not read)
    faults-applied.jsonl   the runner's fault commands as they fire (entry, t_ns, ok, command)
    fidelity*.jsonl        the fidelity monitor's records, when a monitor writes one (its last
                           record's "verdict" or "state" is shown)
Port counters per host and plane (goodput per plane) come from the controller's
GET /counters/ports: the T0 port facing host h on plane p transmits what h receives on p.

LiveState is pure (records in, numbers out); Follower reads files; Watcher ties them together
and asks the controller through a function it is given (emulation/run/metrics_server.py's).
"""
from __future__ import annotations

import time
from pathlib import Path

from analysis.jsonl import parse_record
from model.events import Event
from model.topology import ev_plane, ev_spine

EV_STATES = ("GOOD", "SUSPECT", "ASSUMED_BAD", "DENIED")
# what the endpoint logs add to the workers' (EV states and retransmissions live only there)
ENDPOINT_EVENTS = frozenset({Event.EV_STATE, Event.EV_SUSPECT, Event.EV_CLEARED,
                             Event.RETRANSMIT})


class Follower:
    """New complete JSONL records of a set of files since the last poll."""

    def __init__(self):
        self.offsets: dict[Path, int] = {}
        self.partial: dict[Path, bytes] = {}

    def poll(self, paths) -> list[tuple[Path, dict]]:
        out = []
        for p in paths:
            try:
                with open(p, "rb") as f:
                    f.seek(self.offsets.get(p, 0))
                    chunk = f.read()
            except OSError:
                continue
            self.offsets[p] = self.offsets.get(p, 0) + len(chunk)
            *lines, self.partial[p] = (self.partial.get(p, b"") + chunk).split(b"\n")
            for line in lines:
                rec, _ = parse_record(line)
                if rec is not None:
                    out.append((p, rec))
        return out


class LiveState:
    """Counters of one transport's run, updated record by record."""

    def __init__(self, transport: str = "?"):
        self.transport = transport
        self.rx_bytes: dict[str, float] = {}         # host -> cumulative received payload
        self.rate_mbit: dict[str, float] = {}        # host -> over the last two goodput samples
        self._last_goodput: dict[str, tuple[int, float]] = {}
        self.retransmits: dict[str, int] = {}        # host -> cumulative (goodput samples)
        self.retransmit_events = 0
        self.ev_state: dict[tuple, str] = {}         # (host, qp, ev) -> current state
        self.faults: list[dict] = []                 # faults as they fired
        self.iterations_done: dict[str, int] = {}
        self.fidelity: str | None = None
        self.plane_rate_mbit: dict[tuple[str, int], float] = {}   # (host, plane) -> Mbit/s
        self.trimmed: int | None = None
        self.cpu_busy: float | None = None

    def feed(self, rec: dict, source: str = "worker") -> None:
        if source == "faults":
            self.faults.append(rec)
            return
        if source == "fidelity":
            value = rec.get("verdict", rec.get("state"))
            if isinstance(value, str):
                self.fidelity = value
            return
        host, kind = rec.get("host"), rec.get("event")
        if not isinstance(host, str):
            return
        if source == "endpoint" and kind not in ENDPOINT_EVENTS:
            return      # its goodput counts the endpoint's bytes; the worker's are the run's
        if kind == Event.GOODPUT:
            t, rx = rec.get("t_ns"), rec.get("rx_bytes")
            if isinstance(t, int) and isinstance(rx, (int, float)):
                last = self._last_goodput.get(host)
                if last is not None and t > last[0]:
                    self.rate_mbit[host] = (rx - last[1]) * 8 / ((t - last[0]) / 1e9) / 1e6
                self._last_goodput[host] = (t, rx)
                self.rx_bytes[host] = rx
            if isinstance(rec.get("retransmits"), int):
                self.retransmits[host] = rec["retransmits"]
        elif kind == Event.EV_STATE and isinstance(rec.get("new"), str):
            self.ev_state[(host, rec.get("qp"), rec.get("ev"))] = rec["new"]
        elif kind == Event.EV_SUSPECT:
            self.ev_state[(host, rec.get("qp"), rec.get("ev"))] = "SUSPECT"
        elif kind == Event.EV_CLEARED:
            self.ev_state[(host, rec.get("qp"), rec.get("ev"))] = "GOOD"
        elif kind == Event.RETRANSMIT:
            self.retransmit_events += 1
        elif kind == Event.ITERATION and isinstance(rec.get("iter"), int):
            self.iterations_done[host] = max(self.iterations_done.get(host, 0), rec["iter"] + 1)

    def ev_counts(self) -> dict[str, dict[str, int]]:
        """{path "p<plane>s<spine>": {state: EVs in it}} over every host's QPs."""
        out: dict[str, dict[str, int]] = {}
        for (_, _, ev), state in self.ev_state.items():
            if not isinstance(ev, int):
                continue
            path = f"p{ev_plane(ev)}s{ev_spine(ev)}"
            counts = out.setdefault(path, {s: 0 for s in EV_STATES})
            counts[state] = counts.get(state, 0) + 1
        return dict(sorted(out.items()))

    def set_port_counters(self, previous: dict | None, current: dict, dt_s: float,
                          topology) -> None:
        """Goodput per host and plane from two GET /counters/ports answers dt_s apart."""
        if not previous or dt_s <= 0:
            return
        for link in topology.links:
            if link.kind != "host":
                continue
            switch, port = link.b, str(link.b_port)
            try:
                now = current[switch][port]["tx_bytes"]
                before = previous[switch][port]["tx_bytes"]
            except (KeyError, TypeError):
                continue
            self.plane_rate_mbit[(link.a, link.plane)] = max(0, now - before) * 8 / dt_s / 1e6

    # ------------------------------------------------------------ outputs

    def prometheus(self) -> str:
        """The state in Prometheus' text exposition format (version 0.0.4)."""
        t = self.transport
        lines = []

        def metric(name, kind, help_text, samples):
            lines.append(f"# HELP {name} {help_text}")
            lines.append(f"# TYPE {name} {kind}")
            for labels, value in samples:
                text = ",".join(f'{k}="{v}"' for k, v in (("transport", t),) + labels)
                lines.append(f"{name}{{{text}}} {value}")

        metric("mrclab_goodput_mbit", "gauge", "received payload rate per host (Mbit/s)",
               [((("host", h),), round(v, 3)) for h, v in sorted(self.rate_mbit.items())])
        metric("mrclab_rx_bytes_total", "counter", "received payload per host (bytes)",
               [((("host", h),), int(v)) for h, v in sorted(self.rx_bytes.items())])
        metric("mrclab_plane_goodput_mbit", "gauge",
               "rate the T0 delivers to each host on each plane (Mbit/s)",
               [((("host", h), ("plane", str(p))), round(v, 3))
                for (h, p), v in sorted(self.plane_rate_mbit.items())])
        metric("mrclab_retransmits_total", "counter", "packets resent per host",
               [((("host", h),), v) for h, v in sorted(self.retransmits.items())])
        metric("mrclab_evs", "gauge", "EVs per path and state over all QPs",
               [((("path", path), ("state", s)), n) for path, counts in self.ev_counts().items()
                for s, n in counts.items()])
        metric("mrclab_faults_fired_total", "counter", "fault commands the runner sent",
               [((), len(self.faults))])
        metric("mrclab_iterations_done", "gauge", "timed iterations finished per host",
               [((("host", h),), n) for h, n in sorted(self.iterations_done.items())])
        if self.trimmed is not None:
            metric("mrclab_trimmed_total", "counter", "packets trimmed in the fabric",
                   [((), self.trimmed)])
        if self.cpu_busy is not None:
            metric("mrclab_cpu_busy_ratio", "gauge", "share of the machine's cores busy",
                   [((), round(self.cpu_busy, 3))])
        if self.fidelity is not None:
            metric("mrclab_fidelity_ok", "gauge", "1 when the fidelity monitor says ok",
                   [((("verdict", self.fidelity),), int(self.fidelity == "ok"))])
        return "\n".join(lines) + "\n"

    def to_json(self) -> dict:
        """What the screen shows, as one JSON object (`mrclab top --json`): per host goodput
        (Mbit/s, over the last two samples), retransmissions, per-plane rates, EV states per
        path, faults fired."""
        return {"transport": self.transport, "fidelity": self.fidelity,
                "iterations_done": min(self.iterations_done.values(), default=0),
                "cpu_busy_percent": None if self.cpu_busy is None else 100 * self.cpu_busy,
                "trimmed": self.trimmed,
                "hosts": {h: {"goodput_mbit": self.rate_mbit.get(h, 0.0),
                              "retransmissions": self.retransmits.get(h, 0),
                              "plane_goodput_mbit": {str(p): r for (host, p), r
                                                     in sorted(self.plane_rate_mbit.items())
                                                     if host == h}}
                          for h in sorted(set(self.rate_mbit) | set(self.retransmits),
                                          key=lambda x: (len(x), x))},
                "ev_states_by_path": self.ev_counts(), "faults_fired": self.faults}

    def screen(self) -> str:
        """The `mrclab top` screen (fits 100 columns)."""
        out = [f"transport {self.transport}   iterations done "
               f"{min(self.iterations_done.values(), default=0)}   "
               f"CPU busy {'-' if self.cpu_busy is None else f'{100 * self.cpu_busy:.0f}%'}   "
               f"fidelity {self.fidelity or 'n/a'}   "
               f"trimmed {'-' if self.trimmed is None else self.trimmed}"]
        planes = sorted({p for _, p in self.plane_rate_mbit})
        out.append("")
        out.append("host   goodput Mbit/s  retransmits  "
                   + "  ".join(f"plane {p:<3}" for p in planes))
        for h in sorted(set(self.rate_mbit) | set(self.retransmits), key=lambda x: (len(x), x)):
            per_plane = "  ".join(f"{self.plane_rate_mbit.get((h, p), 0):9.1f}" for p in planes)
            out.append(f"{h:<6} {self.rate_mbit.get(h, 0):14.1f}  {self.retransmits.get(h, 0):11d}"
                       f"  {per_plane}".rstrip())
        counts = self.ev_counts()
        if counts:
            out.append("")
            out.append("path     " + "  ".join(f"{s:>11}" for s in EV_STATES))
            for path, c in counts.items():
                out.append(f"{path:<8} " + "  ".join(f"{c.get(s, 0):11d}" for s in EV_STATES))
        out.append("")
        out.append(f"faults fired: {len(self.faults)}")
        for f in self.faults[-5:]:
            cmd = f.get("command") if isinstance(f.get("command"), dict) else {}
            what = " ".join(str(cmd.get(k)) for k in ("action", "a", "b", "percent") if cmd.get(k)
                            is not None)
            out.append(f"  #{f.get('entry')} {what or f.get('reason') or ''}"
                       f"{'' if f.get('ok', True) else '  REFUSED'}")
        return "\n".join(out)


def cpu_busy_sampler():
    """A function returning the machine's busy core share since its previous call (/proc/stat)."""
    last = [None]

    def sample() -> float | None:
        try:
            with open("/proc/stat") as f:
                fields = [int(x) for x in f.readline().split()[1:]]
        except (OSError, ValueError):
            return None
        idle, total = fields[3] + (fields[4] if len(fields) > 4 else 0), sum(fields)
        prev, last[0] = last[0], (idle, total)
        if prev is None or total == prev[1]:
            return None
        return 1 - (idle - prev[0]) / (total - prev[1])
    return sample


def transport_sources(tdir: Path) -> dict[str, list[Path]]:
    """The files LiveState reads in one transport directory, by source."""
    return {"worker": sorted(tdir.glob("worker-*.jsonl")),
            "endpoint": sorted(tdir.glob("endpoint-*.jsonl")),
            "faults": [tdir / "faults-applied.jsonl"],
            "fidelity": sorted(tdir.glob("fidelity*.jsonl"))}


class Watcher:
    """Follows one transport directory into a LiveState; poll() once a second or so."""

    def __init__(self, tdir: Path, transport: str, topology=None, controller=None):
        self.tdir, self.state = Path(tdir), LiveState(transport)
        self.follower = Follower()
        self.topology, self.controller = topology, controller
        self.cpu = cpu_busy_sampler()
        self.cpu()
        self._ports, self._ports_t = None, None

    def poll(self) -> LiveState:
        for source, paths in transport_sources(self.tdir).items():
            for _, rec in self.follower.poll(paths):
                self.state.feed(rec, source)
        self.state.cpu_busy = self.cpu()
        if self.controller is not None and self.topology is not None:
            try:
                ports = self.controller("/counters/ports")
            except Exception:   # noqa: BLE001 - the controller going away ends the run, not us
                ports = None
            try:
                trim = self.controller("/counters/trim")
                self.state.trimmed = sum(int(c.get("trimmed", 0)) for c in trim.values()
                                         if isinstance(c, dict))
            except Exception:   # noqa: BLE001 - no trimming program: no trim counter
                pass
            now = time.monotonic()
            if ports:
                self.state.set_port_counters(self._ports, ports,
                                             now - self._ports_t if self._ports_t else 0,
                                             self.topology)
                self._ports, self._ports_t = ports, now
        return self.state
