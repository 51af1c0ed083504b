"""What a run concludes: each transport's summary.json (the run model of its directory plus
what only the runner knows), the run's top-level summary.json and its exit code (run_verdict).

Works on partial runs too: everything is read back from the run directory, so a crash or
Ctrl-C still leaves a summary of what was logged.
"""
from __future__ import annotations

from pathlib import Path

from analysis.fidelity_verdict import RECOVERY_WINDOWS   # pure: names and verdict rules
from analysis import metric_names   # pure: the one definition of each metric
from emulation.network import path_monitor
from emulation.run.run_output import write_csvs
from emulation.config.scenario import Scenario
from model import propagation, timescale
from traffic.core.qp_config import MRCConfig
from emulation.cli_common import EXIT_INTERRUPTED  # noqa: F401 - runner.py re-exports it

# Exit codes of `mrclab run` (README "Running an experiment").
EXIT_OK = 0
EXIT_NOT_VERIFIED = 1        # a transport's run is incomplete, failed or did not verify its data
EXIT_BAD_SCENARIO = 2
EXIT_FAULT_NOT_EFFECTIVE = 3  # every transport verified, but a scheduled fault never took effect
EXIT_FIDELITY = 4            # --require-fidelity: all verified, but a transport's fidelity is not ok
# Ctrl-C: EXIT_INTERRUPTED, 130, every command's (emulation/cli_common.py)


def loss_policy_in_force(scn: Scenario) -> str:
    """The MRC loss policy the run's QPs used: the scenario's [mrc.qp] loss_policy, else the
    QP's default (traffic/core/loss_policy.py)."""
    return (scn.mrc.get("qp") or {}).get("loss_policy") or MRCConfig().loss_policy


def retirement_fields(scn: Scenario, transport: str, tdir: Path) -> dict:
    """MRC's EV retirements, and how many hit a path no fault touched (analysis/retirements.py):
    the false verdicts of the loss policy in force. None for the single-path transports."""
    from analysis import retirements  # deferred: only to summarise
    if transport != "mrc":
        return {k: None for k in retirements.SUMMARY_KEYS}
    qp = scn.mrc.get("qp") or {}
    lookback_ns = qp.get("rto_max_ns") or MRCConfig().rto_max_ns
    return retirements.transport_retirements(
        tdir, scn.topology, lookback_ns=lookback_ns, ecmp=scn.routing_for(transport)[0] == "ecmp")


def load_packets(tdir: Path):
    """The transport's captures (analysis.pcap), or (None, why not): loaded once per summary,
    shared by the fabric delay and the fidelity monitor."""
    if not list((tdir / "pcaps").glob("*.pcap")):
        return None, None
    from analysis import pcap  # deferred: numpy/pandas, only to summarise
    try:
        return pcap.load_captures(tdir, clock=pcap.find_clock(tdir)), None
    except Exception as exc:  # noqa: BLE001 - a bad capture must not cost the summary
        return None, f"{exc.__class__.__name__}: {exc}"


def fidelity_fields(scn: Scenario, transport: str, tdir: Path, summary: dict, packets) -> dict:
    """`fidelity` (analysis/fidelity.py) of the transport over its timed iterations; first the
    ovs-vswitchd stalls of that window are copied into the run directory (ovs_stalls.json)."""
    from analysis import fidelity, pcap  # deferred: numpy/pandas, only to summarise
    from analysis import fidelity_captures, fidelity_verdict  # deferred: as the line above
    start, end = summary.get("timed_start_ns"), summary.get("traffic_end_ns")
    try:
        clock = pcap.ClockOffset.load(tdir / "clock.json")
        k = float(scn.time_scale)        # the summary's times are emulated, the log's wall
        window = ((None, None) if start is None or end is None
                  else (timescale.wall_ns(start, k) + clock.offset_ns,
                        timescale.wall_ns(end, k) + clock.offset_ns))
    except (OSError, ValueError):
        window = (None, None)
    fidelity.record_ovs_stalls(tdir, *window)
    topo = scn.topology
    trim = scn.trimming_for(transport)
    delayed = transport in propagation.DELAYED_TRANSPORTS
    facts = fidelity_captures.FabricFacts(
        host_link_mbit=scn.spec.host_link_mbit, fabric_link_mbit=scn.spec.fabric_link_mbit,
        mtu=scn.spec.mtu, trimmed=bool(trim and trim.get("trim")),
        switch_buffer_bytes=None if scn.switch_buffer_kb is None else scn.switch_buffer_kb * 1024,
        host_groups={h.name: h.group for h in topo.hosts},
        port_addrs={(h.name, p): str(topo.nic_addr(h.index, p))
                    for h in topo.hosts for p in range(scn.spec.planes)},
        frame_rtt_ns=propagation.shortest_path_rtt_ns(scn.spec, delayed),
        propagation_rtt_ns=propagation.shortest_path_propagation_rtt_ns(scn.spec, delayed),
        ports_rtt_ns=propagation.ports_rtt_ns(scn.spec))
    faults = list(zip(summary.get("fault_times_ns") or [], summary.get("recovery_ms") or []))
    try:
        fid = fidelity.transport_fidelity(tdir, facts, start, end, packets=packets, faults=faults)
        return {"fidelity": fid, "recovery_void": recovery_void(fid, len(faults))}
    except Exception as exc:  # noqa: BLE001 - the rest of the summary matters more
        return {"fidelity": fidelity_verdict.assemble([], {}, {}, [
            f"fidelity monitor failed: {exc.__class__.__name__}: {exc}"])}


def recovery_void(fid: dict, n_faults: int) -> list:
    """Per fault (as recovery_ms): None, or why a stall inside its recovery window voids it."""
    judged = (fid.get("measurements") or {}).get(RECOVERY_WINDOWS) or []
    reasons = [w.get("reason") if w.get("void") else None for w in judged]
    return (reasons + [None] * n_faults)[:n_faults]


def bandwidth_and_delay(scn: Scenario, transport: str, tdir: Path, summary: dict,
                        packets=None) -> dict:
    """`busbw_mbit` and `line_rate_fraction` (analysis/metric_names.py: the median iteration's
    NCCL bus bandwidth per rank, and that over the host's planes x host link rate);
    `fabric_delay_p999_ms`: the 99.9th percentile one-way delay of MRC data packets host port to
    host port, from the run's captures (mrc only, None without captures)."""
    from analysis import delay, pcap  # deferred: numpy/pandas, only to summarise
    out: dict = {"busbw_mbit": None, "line_rate_fraction": None, "fabric_delay_p999_ms": None}
    bus = metric_names.busbw_mbit(scn.collective.kind, scn.collective.message_bytes,
                                  summary["world_size"],
                                  metric_names.median_iteration_ms(
                                      summary.get("iteration_times_ms")))
    fraction = metric_names.line_rate_fraction(bus, scn.spec.planes, scn.spec.host_link_mbit)
    out["busbw_mbit"] = bus
    out["line_rate_fraction"] = None if fraction is None else round(fraction, 3)
    if transport == "mrc" and (tdir / "pcaps").is_dir():
        try:
            if packets is None:
                packets = pcap.load_captures(tdir, clock=pcap.find_clock(tdir))
            p999 = delay.fabric_delay_p999_ms(packets) if len(packets) else float("nan")
        except Exception as exc:  # noqa: BLE001 - a bad capture must not cost the summary
            out["fabric_delay_error"] = f"{exc.__class__.__name__}: {exc}"
        else:
            out["fabric_delay_p999_ms"] = None if p999 != p999 else round(float(p999), 2)
    return out


def summarize(scn: Scenario, transport: str, tdir: Path, state: dict) -> dict:
    """summary.json of one transport: the run model of its directory (analysis.runmodel, which
    the report and the analysis load the same way) plus what only the runner knows (exit codes,
    errors, whether the run was cut short). Works on partial runs too."""
    from analysis import nccl_results, runmodel  # deferred: numpy/pandas, only to summarise
    from analysis import trimming as trim_analysis  # deferred: numpy/pandas, only to summarise
    coll = scn.collective
    model = runmodel.load_transport(tdir, name=transport, faults_scheduled=len(scn.faults))
    codes = state.get("exit_codes", {})
    hosts = [h.name for h in scn.topology.hosts]
    # the scenario's count, or the end named after the last fault (model/traffic_end.py)
    planned = coll.iterations if model.iterations_planned is None else model.iterations_planned
    verified = (not state.get("partial") and len(model.iterations) == planned
                and model.data_verified and all(codes.get(h) == 0 for h in hosts))
    error = state.get("error") or state.get("scheduler_error")
    summary = {
        "scenario": scn.name,
        "short": scn.short,
        "transport": transport,
        "routing": scn.routing_for(transport)[0],
        "dynamic_convergence_s": scn.routing_for(transport)[1],
        "collective": coll.kind,
        "world_size": len(hosts),
        "message_bytes": coll.message_bytes,
        "qps_per_peer": coll.qps_per_peer,
        "iterations_planned": planned,
        "verified": verified,
        "partial": bool(state.get("partial")),
        "error": error,
        "worker_exit_codes": codes,
        "loss_policy": loss_policy_in_force(scn) if transport == "mrc" else None,
        # times below are the emulated world's, rates at the declared link rates
        "time_scale": float(scn.time_scale),
        **model.summary_fields(),
        **propagation.summary_fields(scn.spec, transport),
    }
    summary["nccl"] = nccl_results.result_row(coll.kind, coll.message_bytes, len(hosts),
                                               summary.get("iteration_times_ms"),
                                               summary.get("wrong_elements"))
    packets, capture_error = load_packets(tdir)
    summary.update(bandwidth_and_delay(scn, transport, tdir, summary, packets))
    if capture_error and "fabric_delay_error" not in summary and transport == "mrc":
        summary["fabric_delay_error"] = capture_error
    summary.update(retirement_fields(scn, transport, tdir))
    summary["problems"] = transport_problems(summary, model)
    summary.update(trim_analysis.transport_summary(tdir, scn.trimming_for(transport)))
    k = float(scn.time_scale)        # the runner's records are the wall world's
    applied = [timescale.scale_params(a, k, direction=timescale.BACK)
               for a in state.get("applied", [])]
    summary.update(path_monitor.run_denials(tdir / "faults.jsonl", applied))
    summary["path_monitor_error"] = state.get("monitor_error")
    from analysis import flows as flow_analysis  # deferred: numpy/pandas, only to summarise
    summary.update(flow_analysis.flow_summary(tdir))     # bisection flows, incast victim
    summary.update(fidelity_fields(scn, transport, tdir, summary, packets))
    write_csvs(tdir, model)
    return summary


def transport_problems(summary: dict, model) -> list[str]:
    """What a user must know before trusting this transport's numbers, one sentence each."""
    out = []
    if summary.get("error"):
        out.append(f"run error: {summary['error']}")
    failure = summary.get("transport_failure")
    if failure:
        out.append(describe_transport_failure(failure, summary.get("iterations_completed")))
    if summary.get("partial"):
        out.append("the run was cut short; the numbers cover only what was logged")
    done, planned = summary.get("iterations_completed"), summary.get("iterations_planned")
    if planned is not None and done != planned:
        out.append(f"{done} of {planned} iterations completed")
    if not model.data_verified:
        out.append("a collective result did not verify")
    out += [f"worker {e}" for e in model.worker_errors]
    bad = {h: c for h, c in (summary.get("worker_exit_codes") or {}).items() if c != 0}
    if bad:
        out.append("worker exit codes " + ", ".join(f"{h}={c}" for h, c in bad.items()))
    from analysis.runmodel import describe_not_effective  # deferred: numpy, only to summarise
    out += [describe_not_effective(f) for f in model.not_effective]
    return out


def describe_transport_failure(failure: dict, completed: int | None) -> str:
    """One sentence: the transport's collective failed on a QP error, where and when (what a
    job on this transport would have seen), and what the run did about it."""
    after = failure.get("after_timed_start_ms")
    when = ("before the timed iterations started" if after is None
            else f"{after / 1e3:.3f} s after the timed iterations started")
    return (f"the transport failed: the collective ended on {failure.get('host')}'s "
            f"{failure.get('reason')}, {when}, after {completed} timed iterations; the other "
            f"workers were stopped at once")


def fidelity_ok(summary: dict) -> bool:
    return (summary.get("fidelity") or {}).get("verdict") == "ok"


def run_verdict(summaries: list[dict], interrupted: bool,
                require_fidelity: bool = False) -> tuple[int, list[str]]:
    """(exit code, problems prefixed by transport) of a whole run: not verified beats a fault
    that did not take effect, which beats (with require_fidelity) a fidelity verdict that is
    not ok, which beats success."""
    problems = [f"{s['transport']}: {p}" for s in summaries for p in s.get("problems") or []]
    if interrupted:
        return EXIT_INTERRUPTED, problems + ["interrupted: the summary is partial"]
    if not all(s.get("verified") for s in summaries):
        return EXIT_NOT_VERIFIED, problems
    if not all(s.get("faults_ok", True) for s in summaries):
        return EXIT_FAULT_NOT_EFFECTIVE, problems
    if require_fidelity and not all(fidelity_ok(s) for s in summaries):
        return EXIT_FIDELITY, problems
    return EXIT_OK, problems


TOP_SUMMARY_KEYS = ("verified", "partial", "error", "problems", "data_verified", "mean_iteration_ms",
                    "slowest_iteration_ms", "recovery_ms", "recovery_void", "fault_times_ns",
                    "iterations_completed", "faults_scheduled", "faults_applied", "faults_ok",
                    "faults_failed", "faults_not_reached", "flows", "loss_policy",
                    "evs_retired", "healthy_evs_retired", "nccl", "transport_failure",
                    "propagation", "time_scale")


def top_fidelity(summary: dict) -> dict | None:
    """A transport's fidelity in the run's summary.json: verdict and violations (the
    measurements stay in the transport's own summary.json)."""
    fid = summary.get("fidelity")
    if not isinstance(fid, dict):
        return None
    return {"verdict": fid.get("verdict"), "violations": fid.get("violations") or [],
            "margins": fid.get("margins") or {}}


def top_summary(scn: Scenario, run_dir: Path, summaries: list[dict], interrupted: bool,
                require_fidelity: bool = False) -> dict:
    """The run directory's summary.json: every transport's verdict and the run's exit code."""
    from analysis import trimming as trim_analysis  # deferred: numpy/pandas, only to summarise
    code, problems = run_verdict(summaries, interrupted, require_fidelity)
    return {
        "scenario": scn.name, "short": scn.short, "run_dir": str(run_dir),
        # what one plane's port keeps in flight on the longest path (model/propagation.py)
        "bdp_packets_per_plane": round(propagation.bdp_packets(scn.spec), 2),
        "partial": interrupted or any(s.get("partial") for s in summaries),
        "exit_code": code,
        "verified": all(s.get("verified") for s in summaries),
        "faults_ok": all(s.get("faults_ok", True) for s in summaries),
        "problems": problems,
        "transports": {s["transport"]: {**{k: s.get(k) for k in TOP_SUMMARY_KEYS
                                           + trim_analysis.SUMMARY_KEYS},
                                        **metric_names.of_summary(s),
                                        "fidelity": top_fidelity(s)}
                       for s in summaries},
        "fidelity_ok": all(fidelity_ok(s) for s in summaries),
        "trimming_option": scn.trimming,
        "trimming_note": "[options] trimming: queue-based ECN marking on every switch port for "
                         "every transport, trimming for mrc only" if scn.trimming else
                         "[options] trimming = false: plain HTB switch ports, no marking, no trimming"}
