"""In-fabric trimming and queue-based ECN in a run: switch-port counters, NACKs, EV health, and
the incast victim flow's goodput.

Inputs per transport directory (written by the runner / fabric / endpoints):
  trim_counters.json   {"mark", "trim", "totals", "ports": {switch egress intf: counters}}
  endpoint-h<n>.jsonl  endpoint event log: ev_state, retransmit {reason}, final counters with
                       per-QP sender/receiver counters (receiver "nacks" = NACKs sent,
                       "trimmed" = trimmed packets received; sender "nacks" = NACKs received)
  worker-h<n>.jsonl    worker log: goodput {rx_bytes cumulative}; the victim flow's destination
                       receives nothing else in an incast, so its rx_bytes is the victim's goodput
  worker.json          collective, incast_target, victim [src rank, dst rank], hosts
Pure functions over parsed data, plus small loaders; used by the runner's summary, the report
and the figures.
"""
from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from analysis.flows import mean_goodput_mbit
from analysis.jsonl import read_jsonl
from analysis.logs import read_json, record_problem
from model.events import Event, Phase

CONGESTION_REASONS_NOT_FAILURE = ("nack_trimmed",)


# the fields this module's consumers read of each event
TRIM_EVENT_NEEDS = {Event.GOODPUT: ("rx_bytes",), Event.ITERATION: ("end_ns",)}


def _read_jsonl(path: Path, wanted: tuple[str, ...]) -> list[dict]:
    """The `wanted` events of one JSONL log that the analysis can use: lines cut by a crash, and
    lines whose fields have the wrong type (analysis.logs.record_problem), are skipped."""
    def usable(ev: dict) -> str | None:
        return record_problem(ev, needs=TRIM_EVENT_NEEDS) or (None if _counters_ok(ev)
                                                              else "counters not numbers")
    return read_jsonl(path, [], check=usable, events=wanted)


# the per-QP counters endpoint_stats adds up
QP_COUNTERS = {"sender": ("nacks", "timeouts", "loss_verdicts_opened", "losses_explained_by_trim",
                          "losses_explained_by_late_delivery", "loss_verdicts_failed"),
               "receiver": ("nacks", "trimmed", "sack_copies")}


def _counters_ok(ev: dict) -> bool:
    """A final `counters` event's per-QP sender/receiver counters are numbers."""
    if ev.get("event") != Event.COUNTERS:
        return True
    qps = ev.get("qps") or {}
    for qp in qps.values():
        if not isinstance(qp, dict):
            return False
        for side, keys in QP_COUNTERS.items():
            table = qp.get(side) or {}
            if not isinstance(table, dict) or not all(_is_count(table.get(k, 0)) for k in keys):
                return False
    return True


def _load_snapshot(tdir, name: str) -> dict | None:
    """A counters snapshot the fabric wrote at teardown: the run dir's copy, else the one in
    its fabric/ directory; None if missing or unreadable. Ports whose counters are not numbers
    are left out, so one corrupt entry does not hide the others."""
    p = Path(tdir) / name
    if not p.exists():
        p = Path(tdir) / "fabric" / name
    data = read_json(p)
    if data is None:
        return None
    if "ports" in data:
        ports = data["ports"] if isinstance(data["ports"], dict) else {}
        data["ports"] = {port: v for port, v in ports.items()
                         if isinstance(v, dict) and all(_is_count(v.get(c, 0)) for c in PORT_COUNTERS)}
    if not isinstance(data.get("totals", {}), dict):
        data["totals"] = {}
    return data


def _is_count(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def load_trim_counters(tdir) -> dict | None:
    """The BPF virtual queues' counters (emulation/network/bpf/trim.c), None if not recorded."""
    return _load_snapshot(tdir, "trim_counters.json")


def load_queue_counters(tdir) -> dict | None:
    """The switch egress queues' counters (emulation/network/switchqueue.py), None if not recorded."""
    return _load_snapshot(tdir, "queue_counters.json")


PORT_COUNTERS = ("offered_packets", "marked", "trimmed", "dropped", "mrc_data_packets",
                 "vq_peak_bytes")


def port_table(counters: dict | None) -> pd.DataFrame:
    """One row per switch egress port (offered, marked, trimmed, dropped, vq peak, last hop)."""
    cols = ["port", *PORT_COUNTERS]
    if not counters or not counters.get("ports"):
        return pd.DataFrame(columns=cols)
    rows = [{"port": p, **{c: int(v.get(c, 0)) for c in cols[1:]}}
            for p, v in counters["ports"].items()]
    return pd.DataFrame(rows, columns=cols).sort_values("port").reset_index(drop=True)


def endpoint_stats(events_by_host: dict[str, list[dict]]) -> dict:
    """NACKs, trimmed arrivals, retransmissions by cause and EV transitions to ASSUMED_BAD (by
    reason) from endpoint event logs ({host: [events]}: ev_state, retransmit, counters)."""
    out = {"nacks_sent": 0, "nacks_received": 0, "trimmed_received": 0, "timeouts": 0,
           "tail_sack_copies": 0,
           "retransmits_by_reason": {}, "ev_assumed_bad": 0, "ev_assumed_bad_reverse": 0,
           "ev_assumed_bad_by_reason": {},
           "loss_verdicts_opened": 0, "losses_explained_by_trim": 0,
           "losses_explained_by_late_delivery": 0, "loss_verdicts_failed": 0,
           "hosts_with_counters": 0}
    for evs in events_by_host.values():
        final = None
        for e in evs:
            name = e.get("event")
            if name == Event.RETRANSMIT:
                r = str(e.get("reason"))
                out["retransmits_by_reason"][r] = out["retransmits_by_reason"].get(r, 0) + 1
            elif name == Event.EV_STATE and e.get("new") == "ASSUMED_BAD":
                # forward = the data direction (sender's EVs); "reverse" = a receiver's reply
                # paths (its probes), counted apart
                reverse = e.get("direction") == "reverse"
                out["ev_assumed_bad_reverse" if reverse else "ev_assumed_bad"] += 1
                r = ("reverse:" if reverse else "") + str(e.get("reason"))
                out["ev_assumed_bad_by_reason"][r] = out["ev_assumed_bad_by_reason"].get(r, 0) + 1
            elif name == Event.COUNTERS:
                final = e
        if final is not None:
            out["hosts_with_counters"] += 1
            for qp in (final.get("qps") or {}).values():
                snd, rcv = qp.get("sender") or {}, qp.get("receiver") or {}
                out["nacks_sent"] += int(rcv.get("nacks", 0))
                out["trimmed_received"] += int(rcv.get("trimmed", 0))
                out["tail_sack_copies"] += int(rcv.get("sack_copies", 0))
                out["nacks_received"] += int(snd.get("nacks", 0))
                out["timeouts"] += int(snd.get("timeouts", 0))
                for key in ("loss_verdicts_opened", "losses_explained_by_trim",
                            "losses_explained_by_late_delivery", "loss_verdicts_failed"):
                    out[key] += int(snd.get(key, 0))
    return out


def load_endpoint_stats(tdir) -> dict:
    wanted = (Event.EV_STATE, Event.RETRANSMIT, Event.COUNTERS)
    logs = {p.stem.removeprefix("endpoint-"): _read_jsonl(p, wanted)
            for p in sorted(Path(tdir).glob("endpoint-*.jsonl"))}
    return endpoint_stats(logs)


def rate_series(samples: list[tuple[int, int]], bin_ms: float = 100.0,
                t0_ns: int | None = None) -> pd.Series:
    """Cumulative (t_ns, bytes) samples -> Mbit/s per bin (index: seconds since t0)."""
    if len(samples) < 2:
        return pd.Series(dtype=float)
    df = pd.DataFrame(sorted(samples), columns=["t_ns", "bytes"])
    t0 = df["t_ns"].iloc[0] if t0_ns is None else t0_ns
    bin_ns = int(bin_ms * 1e6)
    df["bin"] = (df["t_ns"] - t0) // bin_ns
    last = df.groupby("bin")["bytes"].max()
    full = last.reindex(range(int(last.index.min()), int(last.index.max()) + 1)).ffill()
    delta = full.diff().fillna(full.iloc[0] - df["bytes"].iloc[0]).clip(lower=0)
    series = delta * 8 / (bin_ms / 1e3) / 1e6
    series.index = series.index * bin_ms / 1e3
    return series


def victim_info(worker_cfg: dict) -> tuple[str, str] | None:
    """(src host, dst host) of the incast victim flow, or None."""
    if worker_cfg.get("collective") != "incast" or not worker_cfg.get("victim"):
        return None
    hosts = worker_cfg.get("hosts") or [f"h{i}" for i in range(worker_cfg.get("world_size", 0))]
    src, dst = worker_cfg["victim"]
    return hosts[src], hosts[dst]


def _victim_config_ok(cfg: dict) -> bool:
    """worker.json's victim is [src rank, dst rank] of its hosts (or of world_size ranks)."""
    victim, hosts = cfg.get("victim"), cfg.get("hosts")
    if not victim:
        return True
    if hosts is not None and not (isinstance(hosts, list)
                                  and all(isinstance(h, str) for h in hosts)):
        return False
    world = cfg.get("world_size", 0)
    n = len(hosts) if hosts is not None else world if isinstance(world, int) else 0
    return (isinstance(victim, list) and len(victim) == 2
            and all(isinstance(r, int) and not isinstance(r, bool) and 0 <= r < n for r in victim))


def victim_goodput(tdir, bin_ms: float = 100.0, t0_ns: int | None = None) -> dict | None:
    """The victim flow's goodput: series (Mbit/s per bin) and mean over the timed phase, from the
    victim destination's worker goodput events."""
    tdir = Path(tdir)
    cfg = read_json(tdir / "worker.json")
    if cfg is None or not _victim_config_ok(cfg):
        return None
    pair = victim_info(cfg)
    if pair is None:
        return None
    src, dst = pair
    evs = _read_jsonl(tdir / f"worker-{dst}.jsonl", (Event.GOODPUT, Event.PHASE, Event.ITERATION))
    samples = [(e["t_ns"], e["rx_bytes"]) for e in evs if e["event"] == Event.GOODPUT]
    start = min((e["t_ns"] for e in evs if e["event"] == Event.PHASE
                 and e.get("phase") == Phase.WARMUP_DONE), default=None)
    end = max((e["end_ns"] for e in evs if e["event"] == Event.ITERATION), default=None)
    timed = [s for s in samples if (start is None or s[0] >= start) and (end is None or s[0] <= end)]
    mean = mean_goodput_mbit(timed)     # the one definition of a flow's goodput
    return {"src": src, "dst": dst, "mean_mbit": mean,
            "series": rate_series(samples, bin_ms, t0_ns)}


def transport_summary(tdir, trimming: dict | None) -> dict:
    """What the runner puts into a transport's summary.json about trimming."""
    counters = load_trim_counters(tdir)
    totals = (counters or {}).get("totals") or {}
    ep = load_endpoint_stats(tdir)
    victim = victim_goodput(tdir)
    last_hop = totals.get("last_hop") or {}
    queues = load_queue_counters(tdir) or {}
    qtotals = queues.get("totals") or {}
    return {
        # the real switch queues (HTB, optional finite buffer): packets they dropped
        "switch_buffer_bytes": queues.get("switch_buffer_bytes"),
        "queue_drops": qtotals.get("dropped"),
        "most_dropping_port": qtotals.get("most_dropping_port"),
        "trimming": trimming or {"mark": False, "trim": False},
        "marked": totals.get("marked"),
        "trimmed": totals.get("trimmed"),
        "dropped": totals.get("dropped"),
        "marked_last_hop": last_hop.get("marked"),
        "trimmed_last_hop": last_hop.get("trimmed"),
        "most_trimmed_port": totals.get("most_trimmed_port"),
        "vq_peak_bytes": totals.get("vq_peak_bytes"),
        "nacks_sent": ep["nacks_sent"] if ep["hosts_with_counters"] else None,
        "nacks_received": ep["nacks_received"] if ep["hosts_with_counters"] else None,
        "trimmed_received": ep["trimmed_received"] if ep["hosts_with_counters"] else None,
        "retransmit_timeouts": ep["timeouts"] if ep["hosts_with_counters"] else None,
        # tail SACKs the receivers also sent over a second reverse path (MRCConfig.tail_sack_copy)
        "tail_sack_copies": ep["tail_sack_copies"] if ep["hosts_with_counters"] else None,
        "retransmits_by_reason": ep["retransmits_by_reason"],
        "ev_assumed_bad": ep["ev_assumed_bad"],
        "ev_assumed_bad_reverse": ep["ev_assumed_bad_reverse"],
        "ev_assumed_bad_by_reason": ep["ev_assumed_bad_by_reason"],
        # losses without trim whose EV waited for a verdict (MRCConfig.loss_verdict_ns), and
        # how they ended: explained later (congestion / late packet) or failed (retired)
        "loss_verdicts": ({k: ep[k] for k in ("loss_verdicts_opened", "losses_explained_by_trim",
                                              "losses_explained_by_late_delivery",
                                              "loss_verdicts_failed")}
                          if ep["hosts_with_counters"] else None),
        "victim": None if victim is None else f"{victim['src']}->{victim['dst']}",
        "victim_goodput_mbit": None if victim is None else victim["mean_mbit"],
    }


SUMMARY_KEYS = ("trimming", "marked", "trimmed", "dropped", "queue_drops", "marked_last_hop",
                "nacks_sent", "trimmed_received", "retransmit_timeouts", "ev_assumed_bad",
                "ev_assumed_bad_reverse", "ev_assumed_bad_by_reason", "loss_verdicts", "victim",
                "victim_goodput_mbit")


def comparison_rows(summaries: list[dict]) -> pd.DataFrame:
    """One row per transport with the trimming figures (report table)."""
    rows = []
    for s in summaries:
        t = s.get("trimming") or {}
        rows.append({"transport": s.get("transport"),
                     "mark": bool(t.get("mark")), "trim": bool(t.get("trim")),
                     **{k: s.get(k) for k in SUMMARY_KEYS if k != "trimming"}})
    return pd.DataFrame(rows).set_index("transport") if rows else pd.DataFrame()
