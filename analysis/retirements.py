"""Which EV retirements hit a healthy path: the false verdicts of a loss policy.

An MRC endpoint retires an EV (ev_state -> ASSUMED_BAD) when it judges the EV's path failed. The
path is known from the log alone: the EV's bits name its plane and, under SRv6 source routing,
its T1 (model/topology.py); the QP's `qp` event names the peer; an EV to a peer under the same T0
crosses no T1. Over ECMP routing the T1 is the switches' hash, so every T1 of the plane counts.

A retirement is justified when a link of that path was impaired by a fault (down, flapping,
lossy, degraded, or a link of a black-holed switch; either direction, since a timeout cannot
tell a lost packet from its lost ACK) at some time from `lookback_ns` before the loss was
detected until the retirement. The loss was detected when the EV turned SUSPECT (the tolerant
policy's verdict window) or, without one, at the retirement; a lost packet was sent at most one
ACK timeout before its detection, and an ACK timeout never exceeds MRCConfig.rto_max_ns, the
default lookback.

A retirement on an ACK timeout whose own path was whole is put down to the fault too when the
fault impaired a link of any path the peer's ACKs can take back to it: the receiver sends a SACK
on the plane of the data packet that triggered it, covering the QP's packets of every plane
(traffic/core/receiver.py), over a reverse EV of any of that plane's T1s
(traffic/core/reverse_paths.py), so a packet's acknowledgment may cross a dead link of another
plane and another T1 than the packet did (its `fault` then starts with "ACK path:", and
summary.json counts it in `evs_retired_for_lost_acks`). A SACK gap is no such case: a later packet's SACK came back.
Every other retirement retired a healthy EV.

Not retirements: an EV the control plane allowed again (DENIED -> ASSUMED_BAD, reason
"allowed") must earn GOOD through probes, but nobody judged its path.

Pure: events and fault-log records in, counts out; `transport_retirements` reads a run's
transport directory.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping

from analysis.jsonl import read_jsonl
from model import faults as fault_kinds
from model.events import Event
from model.topology import Topology, ev_plane, ev_spine, make_ev, t0_name, t1_name
from model.transport_defaults import RTO_MAX_NS

DEFAULT_LOOKBACK_NS = RTO_MAX_NS                 # MRCConfig.rto_max_ns's default
NOT_A_VERDICT = ("allowed",)            # ASSUMED_BAD reasons that judge no path
SUMMARY_KEYS = ("evs_retired", "healthy_evs_retired", "evs_retired_for_lost_acks",
                "reverse_evs_retired",
                "healthy_reverse_evs_retired", "healthy_evs_retired_by_reason",
                "retirements_unjudged", "retirement_lookback_ms")


@dataclass(frozen=True)
class Impairment:
    """A link a fault impaired from start_ns to end_ns (None: to the end of the run)."""
    link: frozenset
    start_ns: int
    end_ns: int | None
    action: str

    def overlaps(self, start_ns: int, end_ns: int) -> bool:
        return self.start_ns <= end_ns and (self.end_ns is None or self.end_ns >= start_ns)


@dataclass(frozen=True)
class Retirement:
    """One EV retirement and its judgement: healthy None when the path is unknown."""
    t_ns: int
    host: str
    qp: int
    ev: int
    peer: str | None
    reverse: bool                       # a receiver's ACK path (traffic/core/reverse_paths.py)
    reason: str
    detected_ns: int
    healthy: bool | None
    fault: str | None                   # the impairment that explains it ("link_down t0p0g0~t1p0s0")


def impairments(fault_log: Iterable[Mapping], topology: Topology) -> list[Impairment]:
    """Link impairments from the controller's fault log ({"t_ns", "action", "a", "b", ...}),
    in time order. A fault without its clearing entry lasts to the end of the run; entries
    that name no link of this fabric are skipped (the controller refused such commands)."""
    records = sorted((r for r in fault_log if isinstance(r.get("t_ns"), int)),
                     key=lambda r: r["t_ns"])
    opened: dict[tuple[frozenset, str], tuple[int, str]] = {}   # (link, kind) -> (start, action)
    out: list[Impairment] = []

    def links_of(rec, kind) -> list[frozenset]:
        a, b = rec.get("a"), rec.get("b")
        if kind.target == fault_kinds.NODE:       # every link of the switch
            node = rec.get("node") or a
            return [frozenset(lk.ends()) for lk in topology.links_of(node)] \
                if node in topology.switches else []
        try:
            return [frozenset(topology.link(a, b).ends())]
        except KeyError:
            return []

    def open_(link, kind, t, action):
        opened.setdefault((link, kind), (t, action))

    def close(link, kind, t):
        start = opened.pop((link, kind), None)
        if start is not None:
            out.append(Impairment(link, start[0], t, start[1]))

    # Each kind's window is the fault registry's (model/faults.py): until its clear (keyed by
    # the fault's action, which its clear names), or its own duration (a flap).
    for rec in records:
        action, t = rec.get("action"), rec["t_ns"]
        kind = fault_kinds.BY_ACTION.get(action)
        if kind is None:
            continue
        closes = fault_kinds.window_closed_by(action)
        impairs = kind.impairs_param is None or float(rec.get(kind.impairs_param, 100)) > 0
        for link in links_of(rec, kind):
            if kind.window == fault_kinds.WIN_UNTIL_CLEAR and impairs:
                open_(link, action, t, action)
            elif kind.window == fault_kinds.WIN_OWN:
                out.append(Impairment(link, t, t + fault_kinds.own_window_ns(rec), action))
            elif closes is not None:
                close(link, closes, t)
    out += [Impairment(link, start, None, action) for (link, _), (start, action) in opened.items()]
    return sorted(out, key=lambda i: (i.start_ns, sorted(i.link)))


def path_links(topology: Topology, src: str, dst: str, ev: int, ecmp: bool = False) -> set:
    """The links (frozensets of node names) a packet on `ev` from src to dst can cross: the
    EV's plane and T1, or every T1 of the plane over ECMP routing."""
    plane = ev_plane(ev)
    hs, hd = topology.host(src), topology.host(dst)
    links = {frozenset((hs.name, t0_name(plane, hs.group))),
             frozenset((hd.name, t0_name(plane, hd.group)))}
    if hs.group != hd.group:
        spines = range(topology.spec.spines) if ecmp else (ev_spine(ev),)
        for spine in spines:
            links.add(frozenset((t0_name(plane, hs.group), t1_name(plane, spine))))
            links.add(frozenset((t0_name(plane, hd.group), t1_name(plane, spine))))
    return links


def ack_path_links(topology: Topology, receiver: str, sender: str) -> set:
    """Every link an acknowledgment from receiver to sender can cross: any plane (a SACK leaves
    on the plane of the packet that triggered it and covers every plane's packets), any T1."""
    links = set()
    for plane in range(topology.spec.planes):
        links |= path_links(topology, receiver, sender, make_ev(plane, 0, 1), ecmp=True)
    return links


def judge_retirements(events_by_host: Mapping[str, Iterable[Mapping]],
                      faults: list[Impairment], topology: Topology | None, *,
                      lookback_ns: int = DEFAULT_LOOKBACK_NS,
                      ecmp: bool = False) -> list[Retirement]:
    """Every retirement in the endpoints' logs ({host: events in log order}), judged against
    the run's impairments. Without a topology, or a peer for the EV's QP, `healthy` is None."""
    out = []
    for host, events in events_by_host.items():
        peers: dict[int, str] = {}
        suspect_since: dict[tuple[int, int], int] = {}
        for e in events:
            name = e.get("event")
            if name == Event.QP and isinstance(e.get("qp"), int):
                peers[e["qp"]] = str(e.get("peer"))
                continue
            key = (e.get("qp"), e.get("ev"))
            if not isinstance(key[0], int) or not isinstance(key[1], int):
                continue
            if name == Event.EV_SUSPECT:
                suspect_since.setdefault(key, e["t_ns"])
            elif name == Event.EV_CLEARED:
                suspect_since.pop(key, None)
            elif name == Event.EV_STATE:
                since = suspect_since.pop(key, None)
                if e.get("new") != "ASSUMED_BAD" or e.get("reason") in NOT_A_VERDICT:
                    continue
                t = e["t_ns"]
                detected = t if since is None else since
                peer = peers.get(key[0])
                healthy, fault = _judge(topology, str(e.get("host") or host), peer, key[1],
                                        detected - lookback_ns, t, faults, ecmp,
                                        ack_timeout=(e.get("reason") == "timeout"
                                                     and e.get("direction") != "reverse"))
                out.append(Retirement(t, str(e.get("host") or host), key[0], key[1], peer,
                                      e.get("direction") == "reverse", str(e.get("reason")),
                                      detected, healthy, fault))
    return sorted(out, key=lambda r: (r.t_ns, r.host, r.qp, r.ev))


def _judge(topology, host, peer, ev, start_ns, end_ns, faults, ecmp, ack_timeout=False):
    if topology is None or peer is None:
        return None, None
    try:
        links = path_links(topology, host, peer, ev, ecmp)
        ack_links = ack_path_links(topology, peer, host) if ack_timeout else set()
    except (KeyError, ValueError):
        return None, None
    for imp in faults:
        if imp.link in links and imp.overlaps(start_ns, end_ns):
            return False, f"{imp.action} {'~'.join(sorted(imp.link))}"
    for imp in faults:
        if imp.link in ack_links and imp.overlaps(start_ns, end_ns):
            return False, f"ACK path: {imp.action} {'~'.join(sorted(imp.link))}"
    return True, None


def summarize(retirements: list[Retirement], lookback_ns: int = DEFAULT_LOOKBACK_NS) -> dict:
    """summary.json's fields: data EVs (the loss policy's verdicts) and reverse EVs (the
    receiver's ACK paths) retired, and how many of each on a healthy path. Retirements whose
    path is unknown are counted in `retirements_unjudged` and in neither healthy count."""
    data = [r for r in retirements if not r.reverse]
    reverse = [r for r in retirements if r.reverse]
    by_reason: dict[str, int] = {}
    for r in data:
        if r.healthy:
            by_reason[r.reason] = by_reason.get(r.reason, 0) + 1
    return {
        "evs_retired": len(data),
        "healthy_evs_retired": sum(1 for r in data if r.healthy),
        "evs_retired_for_lost_acks": sum(1 for r in data
                                         if r.fault and r.fault.startswith("ACK path:")),
        "reverse_evs_retired": len(reverse),
        "healthy_reverse_evs_retired": sum(1 for r in reverse if r.healthy),
        "healthy_evs_retired_by_reason": by_reason,
        "retirements_unjudged": sum(1 for r in retirements if r.healthy is None),
        "retirement_lookback_ms": lookback_ns / 1e6,
    }


WANTED_EVENTS = (Event.QP, Event.EV_STATE, Event.EV_SUSPECT, Event.EV_CLEARED)


def load_retirements(tdir, topology: Topology | None, *, lookback_ns: int = DEFAULT_LOOKBACK_NS,
                     ecmp: bool = False, problems: list[str] | None = None) -> list[Retirement]:
    """The judged retirements of one transport directory (endpoint-h*.jsonl, faults.jsonl).
    Unreadable lines are skipped and reported in `problems`."""
    tdir = Path(tdir)
    problems = [] if problems is None else problems
    logs = {p.stem.removeprefix("endpoint-"): [e for e in read_jsonl(p, problems,
                                                                    events=WANTED_EVENTS)
                                               if isinstance(e.get("t_ns"), int)]
            for p in sorted(tdir.glob("endpoint-*.jsonl"))}
    faults = impairments(read_jsonl(tdir / "faults.jsonl", problems), topology) \
        if topology is not None else []
    return judge_retirements(logs, faults, topology, lookback_ns=lookback_ns, ecmp=ecmp)


def transport_retirements(tdir, topology: Topology | None, *,
                          lookback_ns: int = DEFAULT_LOOKBACK_NS, ecmp: bool = False) -> dict:
    """summary.json's retirement fields of one MRC transport directory."""
    return summarize(load_retirements(tdir, topology, lookback_ns=lookback_ns, ecmp=ecmp),
                     lookback_ns)
