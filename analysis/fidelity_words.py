"""The fidelity verdict as every output states it: one judgement per transport, the same words
in the console, report.html, the notebook's conclusion, `mrclab analyze` and `mrclab compare`.

The verdict (analysis/fidelity.py) is the one judgement of whether a run's times measure the
fabric; everything here derives from it, the CPU meter's load included (a saturated machine whose
invariants all held measured the fabric; a machine that was not saturated but stalled did not).
Every statement carries the run's time scale k, and a verdict other than "ok" comes with the
command that gets a valid run. A recovery time a stall voided (analysis/fidelity_windows.py) is
shown as void, never ranked.

Pure: reads summaries (dicts) and a loaded run, imports no Mininet or sockets.
"""
from __future__ import annotations

import statistics
import textwrap

from analysis import runmodel
from analysis.cpu_usage import load_words   # the meter's figures, read through the verdict
from analysis.fidelity_verdict import OK

NOT_ASSESSED = "not assessed"
CONSOLE_COLUMNS = 100


def verdict_of(summary: dict | None) -> str:
    """A transport summary's verdict, NOT_ASSESSED when it has none."""
    fid = (summary or {}).get("fidelity")
    return (fid.get("verdict") if isinstance(fid, dict) else None) or NOT_ASSESSED


def time_scale_of(summary: dict | None) -> float:
    """A summary's time scale (1 for a run written before the time scale existed)."""
    try:
        return float((summary or {}).get("time_scale") or 1.0)
    except (TypeError, ValueError):
        return 1.0


def next_step(scenario: str | None, k: float, auto: bool | None = None) -> str:
    """The command that gets a run whose verdict is "ok": measure the time scale this machine
    keeps up with and run at it. auto: the run's k came from `time_scale = "auto"` (True), a
    number in the scenario (False), or unknown (None: a run read back from its directory)."""
    scn = scenario or "SCENARIO.toml"
    calibrate = f"`mrclab calibrate {scn}`"
    if auto:
        return (f"the calibrated time_scale {k:g} did not hold for this run: run {calibrate} "
                f"again on a quiet machine, or set [fabric] time_scale to a number above {k:g}")
    return (f"run {calibrate} (it finds the smallest time scale this machine keeps up with), "
            f"then set [fabric] time_scale = \"auto\" in the scenario, or a number above {k:g}")


def _violations(fid: dict) -> str:
    out = []
    for v in fid.get("violations") or []:
        ratio = v.get("ratio")
        out.append(f"{v.get('invariant', '?')}"
                   + (f" {ratio:g}x" if isinstance(ratio, (int, float)) else ""))
    return ", ".join(out)


def void_faults(summary: dict | None) -> list[int]:
    """1-based numbers of the faults whose recovery time a stall voided."""
    return [i + 1 for i, why in enumerate((summary or {}).get("recovery_void") or []) if why]


def transport_sentence(summary: dict, scenario: str | None = None,
                       auto: bool | None = None, lead: str | None = None) -> str:
    """The one statement of a transport's verdict: verdict and k, what broke, the voided
    recoveries, the CPU's load read through the verdict, and the next step when not ok.
    lead: what the transport did (the console's takeaway), said first."""
    name = summary.get("transport", "?")
    verdict, k = verdict_of(summary), time_scale_of(summary)
    fid = summary.get("fidelity") if isinstance(summary.get("fidelity"), dict) else {}
    text = f"{name}: " + (f"{lead}; " if lead else "") + f"fidelity {verdict} at time_scale {k:g}"
    broken = _violations(fid) if verdict != OK else ""
    text += f" ({broken})" if broken else ""
    void = void_faults(summary)
    if void:
        text += ("; recovery of fault " + ", ".join(str(i) for i in void)
                 + " void (a stall inside its recovery window)")
    cpu = summary.get("cpu")
    if isinstance(cpu, dict) and "busy_fraction" in cpu:
        text += (f"; CPU {100 * cpu['busy_fraction']:.0f}% of {cpu.get('cores', '?')} cores "
                 "busy" + load_words(cpu, None if verdict == NOT_ASSESSED else verdict))
    elif verdict not in (OK, NOT_ASSESSED):
        text += "; its times measure this machine's CPU, not the fabric"
    if verdict != OK:
        text += ". For a valid run: " + next_step(scenario, k, auto)
    return text + "."


def transport_line(summary: dict, scenario: str | None = None, auto: bool | None = None,
                   lead: str | None = None) -> str:
    """transport_sentence wrapped for a terminal of CONSOLE_COLUMNS (continuations indented)."""
    return textwrap.fill(transport_sentence(summary, scenario, auto, lead), CONSOLE_COLUMNS,
                         subsequent_indent="    ", break_on_hyphens=False)


def void_by_entry(model, summary: dict | None) -> dict:
    """{schedule entry: why a stall voided its recovery} of a loaded transport (its run model
    and summary.json): recovery_void runs parallel to recovery_ms, over the faults with a time
    that were applied or failed, in time order (analysis/runmodel.py summary_fields)."""
    timed = sorted((f for f in model.faults if f.t_ns is not None
                    and f.status in (runmodel.APPLIED, runmodel.FAILED)), key=lambda f: f.t_ns)
    voids = (summary or {}).get("recovery_void") or []
    return {f.entry: voids[i] for i, f in enumerate(timed) if i < len(voids) and voids[i]}


def recovery_cell(recovery_ms, void_reason) -> str:
    """A recovery time as the tables show it: ms, `never`, and `void` when a stall voided it."""
    text = "never" if recovery_ms is None else f"{recovery_ms:.0f}"
    return f"{text} void" if void_reason else text


# ---------------------------------------------------------------- the notebook's conclusion


def _fault_words(f, void_reason) -> str:
    took = "never recovered" if f.recovery_ms is None else f"recovered in {f.recovery_ms:.0f} ms"
    return f"{f.label()}: {took}" + (" (void: a stall inside its recovery window)"
                                     if void_reason else "")


def conclusion_markdown(run) -> str:
    """The notebook's conclusion (Markdown) of a loaded run (analysis.metrics.load_run): each
    transport's iterations, recoveries and verdict; which transport came back first after the
    first fault, only among transports whose verdict is "ok" and whose recovery is not void."""
    lines, first, judged = [], {}, {}
    for name, td in run.transports.items():
        s, model = td.summary or {}, td.model
        times = model.iteration_times_ms
        words = [f"**{name}**: fidelity {verdict_of(s)} at time_scale {time_scale_of(s):g}; "
                 f"{len(times)} iterations, "
                 + ("data verified" if s.get("verified", model.data_verified)
                    else "data NOT verified")]
        if times:
            words.append(f"median iteration {statistics.median(times):.0f} ms, "
                         f"slowest {max(times):.0f} ms")
        voids = void_by_entry(model, s)
        effective = sorted((f for f in model.faults if f.took_effect and f.t_ns is not None),
                           key=lambda f: f.t_ns)
        for f in effective:
            words.append(_fault_words(f, voids.get(f.entry)))
        if effective:
            first[name] = (effective[0].recovery_ms, bool(voids.get(effective[0].entry)))
        judged[name] = (verdict_of(s), time_scale_of(s))
        lines.append("- " + "; ".join(words) + ".")
    lines.append("\n" + _ranking(first, judged))
    return "\n".join(lines)


def _ranking(first: dict, judged: dict) -> str:
    """first: {transport: (first fault's recovery_ms, void)}; judged: {transport: (verdict,
    k)}. The closing paragraph: the order the transports came back in after the first fault, or
    why there is none."""
    bad = [n for n, (v, _) in judged.items() if v != OK]
    if bad:
        k = max(judged[n][1] for n in bad)
        return (f"No comparison of recovery times: the fidelity of {', '.join(bad)} is not "
                "\"ok\", so its times measure this machine's CPU, not the fabric. For a valid "
                "run: " + next_step(None, k) + ".")
    if len(first) < 2:
        return "Every transport's verdict is \"ok\"; fewer than two recovered from a fault to compare."
    void = [n for n, (_, v) in first.items() if v]
    known = {n: r for n, (r, v) in first.items() if r is not None and not v}
    never = [n for n, (r, v) in first.items() if r is None and not v]
    if not known:
        text = "After the first fault no transport came back with a valid recovery time"
    else:
        best = min(known, key=known.get)
        text = f"After the first fault **{best}** came back first ({known[best]:.0f} ms)"
        others = [f"{n} {r:.0f} ms" for n, r in known.items() if n != best]
        text += ", then " + ", ".join(others) if others else ""
    text += f"; {', '.join(never)} never did" if never else ""
    text += (f"; {', '.join(void)}: void (a stall inside the recovery window), not ranked"
             if void else "")
    return text + "."
