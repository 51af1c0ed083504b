"""Per-flow figures of a run: each flow's goodput and how often ECN moved its sender off a path.

A flow is one (source host, destination host) pair whose destination receives nothing else, so
the destination worker's cumulative `goodput` rx_bytes is that flow's goodput: the flows of a
`bisection` collective (rank r of the first half -> r + W/2) and an incast's victim flow.

EV moves: an ECN echo makes the MRC sender skip the echoed EV until a time (traffic/core/evs.py
`skip`, logged as ev_skip {qp, ev, until_ns}); a trimmed NACK skips it once (ev_skip with
"once"). A move is an ECN skip of an EV that was not already being skipped: the sender then
takes its packets elsewhere; further echoes while it is skipped only extend the skip. Counted
per flow from the source's endpoint log, restricted to the QPs whose peer is the destination
(the endpoint's `qp` event), and per path (plane, spine) so a run shows which path was left.
Where the packets went: the share of the flow's packets sent on each path, from the sender's
final counters, shows the result of those moves (paper §5.2.5: one flow moves to the other EV).

Pure functions over parsed events, plus one loader (flow_summary) the runner's summary uses.
"""
from __future__ import annotations

from pathlib import Path

from analysis.jsonl import read_jsonl
from analysis.logs import read_json
from analysis.timescale import time_scale_of
from model import timescale
from model.events import Event, Phase
from model.topology import ev_plane, ev_spine


def mean_goodput_mbit(samples: list[tuple[int, int]], start_ns: int | None = None,
                      end_ns: int | None = None) -> float | None:
    """Mean goodput (Mbit/s, payload) of cumulative (t_ns, bytes) samples inside [start, end]:
    bytes between the first and last sample in the window over the time between them. None
    with fewer than two samples there."""
    inside = sorted(s for s in samples if (start_ns is None or s[0] >= start_ns)
                    and (end_ns is None or s[0] <= end_ns))
    if len(inside) < 2 or inside[-1][0] <= inside[0][0]:
        return None
    return (inside[-1][1] - inside[0][1]) * 8 / ((inside[-1][0] - inside[0][0]) / 1e9) / 1e6


def ecn_moves(events: list[dict], qps: set[int] | None = None) -> dict:
    """ECN skips and moves in one sender's endpoint events (those of `qps` only, if given):
    {"ecn_skips", "moves", "moves_by_path": {"p<plane>s<spine>": n}, "trim_skips"}."""
    skipped_until: dict[tuple[int, int], int] = {}
    out = {"ecn_skips": 0, "moves": 0, "moves_by_path": {}, "trim_skips": 0}
    for e in events:
        if e.get("event") != Event.EV_SKIP or (qps is not None and e.get("qp") not in qps):
            continue
        if e.get("once"):
            out["trim_skips"] += 1
            continue
        out["ecn_skips"] += 1
        key = (e.get("qp"), e["ev"])
        if e["t_ns"] >= skipped_until.get(key, -1):
            out["moves"] += 1
            path = f"p{ev_plane(e['ev'])}s{ev_spine(e['ev'])}"
            out["moves_by_path"][path] = out["moves_by_path"].get(path, 0) + 1
        skipped_until[key] = max(skipped_until.get(key, -1), int(e["until_ns"]))
    return out


def sent_by_path(events: list[dict], qps: set[int]) -> dict[str, int] | None:
    """Packets the QPs `qps` sent per path {"p<plane>s<spine>": n}, summed from the endpoint's
    final counters (its `counters` event, per QP `sent_packets_by_path`); None without them
    (an endpoint that did not close cleanly, or a transport that does not count them)."""
    final = [e for e in events if e.get("event") == Event.COUNTERS]
    if not final:
        return None
    out: dict[str, int] = {}
    found = False
    for qpn, stats in final[-1]["qps"].items():
        by_path = stats.get("sent_packets_by_path") if isinstance(stats, dict) else None
        if not str(qpn).isdigit() or int(qpn) not in qps or not isinstance(by_path, dict):
            continue
        found = True
        for path, n in by_path.items():
            if _int(n):
                out[path] = out.get(path, 0) + n
    return out if found else None


def shares(counts: dict[str, int] | None) -> dict[str, float] | None:
    """Each key's fraction of the total (None for None or an empty total)."""
    total = sum(counts.values()) if counts else 0
    return {k: n / total for k, n in sorted(counts.items())} if total else None


def qps_to(events: list[dict], peer: str) -> set[int]:
    """The QP numbers an endpoint opened towards `peer` (its `qp` events)."""
    return {e["qp"] for e in events if e.get("event") == Event.QP and e.get("peer") == peer}


def flows_of(worker_cfg: dict) -> list[tuple[str, str]]:
    """(src host, dst host) of every flow the collective defines whose destination receives
    nothing else: a bisection's pairs, an incast's victim flow; [] otherwise."""
    hosts = worker_cfg.get("hosts") or [f"h{i}" for i in range(int(worker_cfg.get("world_size", 0)))]
    kind = worker_cfg.get("collective")
    if kind == "bisection" and len(hosts) >= 2 and len(hosts) % 2 == 0:
        half = len(hosts) // 2
        return [(hosts[r], hosts[r + half]) for r in range(half)]
    if kind == "incast" and worker_cfg.get("victim"):
        src, dst = worker_cfg["victim"]
        return [(hosts[src], hosts[dst])]
    return []


RING_COLLECTIVES = ("allreduce", "reduce_scatter", "allgather", "sendrecv")


def collective_demand(worker_cfg: dict) -> dict[tuple[str, str], float] | None:
    """(src host, dst host) -> the share of a sender's bytes that flow carries, for the
    collective of a worker configuration (traffic/workload/collectives.py's patterns): the ring
    collectives send everything to the next rank, all-to-all spreads a rank's bytes evenly over
    the others, a bisection's first half sends to the rank W/2 on, an incast's senders send to
    the target (and the victim flow its own). The recovery metric weighs each cut of the fabric
    by it (analysis/recovery.py). None when the collective or its ranks are unknown."""
    hosts = worker_cfg.get("hosts")
    if not isinstance(hosts, list) or not all(isinstance(h, str) for h in hosts):
        size = worker_cfg.get("world_size")
        hosts = ([f"h{i}" for i in range(size)] if isinstance(size, int)
                 and not isinstance(size, bool) and size > 0 else [])
    w, kind = len(hosts), worker_cfg.get("collective")
    if w < 2:
        return None
    if kind in RING_COLLECTIVES:
        return {(hosts[r], hosts[(r + 1) % w]): 1.0 for r in range(w)}
    if kind == "alltoall":
        return {(hosts[r], hosts[p]): 1.0 / (w - 1) for r in range(w) for p in range(w) if p != r}
    if kind == "bisection":
        return dict.fromkeys(flows_of(worker_cfg), 1.0) or None
    if kind == "incast":
        target = worker_cfg.get("incast_target", 0)
        if not isinstance(target, int) or not 0 <= target < w:
            return None
        victim = flows_of(worker_cfg)
        skip = {hosts[target]} | (set(victim[0]) if victim and worker_cfg.get("victim_only")
                                  else set())
        demand = {(h, hosts[target]): 1.0 for h in hosts if h not in skip}
        demand.update(dict.fromkeys(victim, 1.0))
        return demand or None
    return None


def coupled_groups(worker_cfg: dict, hosts: list[str]) -> list[frozenset[str]]:
    """Sets of hosts whose iterations are tied together by the data they exchange; a collective
    iteration lasts as long as its slowest group's span (first start to last end in the group).

    A bisection's pairs exchange nothing with each other and run at their own pace: spanning
    all ranks would also count how far one pair has run ahead of the other, a lead that grows
    every iteration (two pairs 0.1 s apart per iteration read 1 s slower by the tenth).
    Every other collective: one group of all `hosts` (none when no host is known)."""
    if not hosts:
        return []
    if worker_cfg.get("collective") == "bisection" and len(hosts) >= 2 and len(hosts) % 2 == 0:
        half = len(hosts) // 2
        return [frozenset((hosts[r], hosts[r + half])) for r in range(half)]
    return [frozenset(hosts)]


def slowest_group_span_ns(records: list[tuple[str, int, int]],
                          groups: list[frozenset[str]]) -> int | None:
    """One iteration's duration from its (host, start_ns, end_ns) records: the longest span of
    any group that logged it (records of hosts in no group count as a group of their own)."""
    spans = []
    members = [set(g) for g in groups]
    members += [{h} for h, _, _ in records if not any(h in g for g in groups)]
    for group in members:
        mine = [(s, e) for h, s, e in records if h in group]
        if mine:
            spans.append(max(e for _, e in mine) - min(s for s, _ in mine))
    return max(spans, default=None)


def timed_window(worker_events: list[dict]) -> tuple[int | None, int | None]:
    """(warmup_done, last iteration end) of one worker log: its timed phase."""
    start = min((e["t_ns"] for e in worker_events if e.get("event") == Event.PHASE
                 and e.get("phase") == Phase.WARMUP_DONE), default=None)
    end = max((e["end_ns"] for e in worker_events if e.get("event") == Event.ITERATION),
              default=None)
    return start, end


def collective_window(worker_logs: dict[str, list[dict]]) -> tuple[int | None, int | None]:
    """(first warmup_done, last iteration end) over the collective's ranks: while it runs."""
    windows = [timed_window(events) for events in worker_logs.values()]
    starts = [w[0] for w in windows if w[0] is not None]
    ends = [w[1] for w in windows if w[1] is not None]
    return (min(starts) if starts else None, max(ends) if ends else None)


def side_flow_collective_hosts(worker_cfg: dict) -> list[str]:
    """The collective's ranks beside an incast's victim-only flow (whose own pace is not the
    collective's); [] for any other run."""
    if worker_cfg.get("collective") != "incast" or worker_cfg.get("victim_only") is not True:
        return []
    hosts = worker_cfg.get("hosts") or [f"h{i}" for i in range(int(worker_cfg.get("world_size", 0)))]
    victim = {hosts[r] for r in worker_cfg.get("victim") or []}
    return [h for h in hosts if h not in victim]


def flow_figures(flows: list[tuple[str, str]], worker_logs: dict[str, list[dict]],
                 endpoint_logs: dict[str, list[dict]], link_mbit: float | None = None,
                 collective_logs: dict[str, list[dict]] | None = None) -> list[dict]:
    """One dict per flow: goodput over its destination's timed phase, goodput over the window
    in which every flow is in its timed phase (the figure to compare flows by: none of them
    alone on the fabric), its fraction of `link_mbit` (the host's NIC: link rate x planes), and
    the ECN moves of its sender. With `collective_logs` (the worker events of the ranks of a
    collective the flows run beside: an incast's, for its victim-only flow), also the goodput
    while that collective runs: a victim that outlives the incast runs alone at its end, and
    its own window then mixes the two."""
    windows = {dst: timed_window(worker_logs.get(dst, [])) for _, dst in flows}
    beside = collective_window(collective_logs) if collective_logs else (None, None)
    starts = [w[0] for w in windows.values()]
    ends = [w[1] for w in windows.values()]
    common = ((max(starts), min(ends)) if flows and None not in starts and None not in ends
              and max(starts) < min(ends) else (None, None))
    out = []
    for src, dst in flows:
        samples = [(e["t_ns"], e["rx_bytes"]) for e in worker_logs.get(dst, [])
                   if e.get("event") == Event.GOODPUT]
        own = mean_goodput_mbit(samples, *windows[dst])
        together = mean_goodput_mbit(samples, *common) if common[0] is not None else None
        lo, hi = windows[dst]
        during = (mean_goodput_mbit(samples, max(lo, beside[0]), min(hi, beside[1]))
                  if None not in (lo, hi, *beside) and max(lo, beside[0]) < min(hi, beside[1])
                  else None)
        src_events = endpoint_logs.get(src)
        moves = by_path = None
        if src_events is not None:
            qps = qps_to(src_events, dst)
            moves, by_path = ecn_moves(src_events, qps), sent_by_path(src_events, qps)
        out.append({
            "src": src, "dst": dst,
            "goodput_mbit": own,
            "goodput_all_flows_mbit": together,
            "goodput_during_collective_mbit": during,
            "link_fraction": (together if together is not None else own) / link_mbit
            if link_mbit and (together if together is not None else own) is not None else None,
            "ecn_moves": None if moves is None else moves["moves"],
            "ecn_moves_by_path": None if moves is None else moves["moves_by_path"],
            "ecn_skips": None if moves is None else moves["ecn_skips"],
            "trim_skips": None if moves is None else moves["trim_skips"],
            "sent_packets_by_path": by_path,
            "sent_share_by_path": shares(by_path),
        })
    return out


def _int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


# the fields this module computes with, per event (a line without them is skipped)
_USABLE_EVENTS = {
    Event.EV_SKIP: lambda e: _int(e.get("t_ns")) and _int(e.get("ev")) and _int(e.get("until_ns"))
    and _int(e.get("qp")),
    Event.QP: lambda e: _int(e.get("qp")) and isinstance(e.get("peer"), str),
    Event.GOODPUT: lambda e: _int(e.get("t_ns")) and isinstance(e.get("rx_bytes"), (int, float))
    and not isinstance(e.get("rx_bytes"), bool),
    Event.PHASE: lambda e: _int(e.get("t_ns")),
    Event.ITERATION: lambda e: _int(e.get("end_ns")),
    Event.COUNTERS: lambda e: isinstance(e.get("qps"), dict),
}


def read_events(path: Path, wanted: tuple[str, ...]) -> list[dict]:
    """The `wanted` events of a JSONL log that carry what this module needs; lines cut by a
    crash or with mistyped fields are skipped, a missing file gives [] (analysis/jsonl.py, which
    also gives a dilated run's times in the emulated world's)."""
    return read_jsonl(path, [], events=wanted,
                      check=lambda e: None if _USABLE_EVENTS[e["event"]](e) else "unusable")


def flow_summary(tdir) -> dict:
    """{"flows": [...]} of one transport's run directory (worker.json, worker-<h>.jsonl,
    endpoint-<h>.jsonl); {"flows": []} when the collective has no such flows."""
    tdir = Path(tdir)
    cfg = read_json(tdir / "worker.json")
    if not isinstance(cfg, dict):
        return {"flows": []}
    try:
        flows = flows_of(cfg)
        side_hosts = side_flow_collective_hosts(cfg)
    except (TypeError, ValueError, IndexError):
        return {"flows": []}
    hosts = {h for f in flows for h in f}
    worker_logs = {h: read_events(tdir / f"worker-{h}.jsonl",
                                  (Event.GOODPUT, Event.PHASE, Event.ITERATION))
                   for h in hosts}
    endpoint_logs = {h: read_events(tdir / f"endpoint-{h}.jsonl",
                                    (Event.EV_SKIP, Event.QP, Event.COUNTERS))
                     for h in hosts if (tdir / f"endpoint-{h}.jsonl").exists()}
    beside = {h: read_events(tdir / f"worker-{h}.jsonl", (Event.PHASE, Event.ITERATION))
              for h in side_hosts}
    fabric = cfg.get("fabric") if isinstance(cfg.get("fabric"), dict) else {}
    # worker.json's fabric is the wall world's: its link rates back to the declared ones
    fabric = timescale.scale_params(fabric, time_scale_of(tdir), direction=timescale.BACK)
    link, planes = fabric.get("host_link_mbit"), fabric.get("planes", 1)
    # a host has one NIC port per plane: its flow can use them all
    nic = (float(link) * planes if isinstance(link, (int, float)) and isinstance(planes, int)
           and planes >= 1 else None)
    return {"flows": flow_figures(flows, worker_logs, endpoint_logs, nic, beside or None)}


def describe(flow: dict) -> str:
    """One line per flow for the runner's printout."""
    rate = flow.get("goodput_all_flows_mbit")
    rate = flow.get("goodput_mbit") if rate is None else rate
    text = f"flow {flow['src']}->{flow['dst']}: " + ("-" if rate is None else f"{rate:.1f} Mbit/s")
    if flow.get("link_fraction") is not None:
        text += f" ({flow['link_fraction']:.0%} of the host's NIC rate)"
    if flow.get("goodput_during_collective_mbit") is not None:
        text += f", {flow['goodput_during_collective_mbit']:.1f} Mbit/s while the collective runs"
    if flow.get("ecn_moves") is not None:
        paths = ", ".join(f"{p} {n}" for p, n in sorted((flow.get("ecn_moves_by_path") or {}).items()))
        text += f", ECN moves {flow['ecn_moves']}" + (f" ({paths})" if paths else "")
    if flow.get("sent_share_by_path"):
        text += ", packets sent " + ", ".join(
            f"{share:.0%} {path}" for path, share in sorted(flow["sent_share_by_path"].items()))
    return text
