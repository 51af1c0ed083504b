"""A scenario's short version: the raw TOML data with its [short] overrides applied.

[short] keys override [collective] and [options]; fault_time_factor shrinks the fault schedule
(at_s, after_s, a flap's period_s); fabric_time_scale is the short version's [fabric] time_scale;
at_iteration scales with the iteration count so a fault still lands at the same fraction of
the run. The result is validated like any scenario, so a short version
that would not run is caught by --validate-only too.
"""
from __future__ import annotations

from emulation.config.scenario_schema import (COLLECTIVE, OPTIONS, SHORT_ONLY, SHORT_RESERVED,
                                              Checker)
from model import faults as fault_kinds

SHORT = {**COLLECTIVE, **OPTIONS, **SHORT_ONLY}


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def apply_short(data: dict, ck: Checker, full_iterations: int) -> dict:
    """The raw data of the short version (the [short] table itself removed)."""
    sh = ck.table(data, "short", SHORT, reserved=SHORT_RESERVED)
    factor = sh.get("fault_time_factor", SHORT_ONLY["fault_time_factor"].default)
    out = {k: v for k, v in data.items() if k != "short"}
    coll = dict(data.get("collective") or {})
    opts = dict(data.get("options") or {})
    for key, value in sh.items():
        if key in COLLECTIVE:
            coll[key] = value
        elif key in OPTIONS:
            opts[key] = value
    out["collective"], out["options"] = coll, opts
    if "fabric_time_scale" in sh:
        out["fabric"] = {**(data.get("fabric") or {}), "time_scale": sh["fabric_time_scale"]}
    short_iters = coll.get("iterations", full_iterations)
    ratio = short_iters / full_iterations if isinstance(short_iters, int) else 1.0
    faults = []
    for entry in data.get("faults") or []:
        entry = dict(entry)
        for key in ("at_s", "after_s", *fault_kinds.time_params_of(entry)):
            if _is_number(entry.get(key)):
                entry[key] = entry[key] * factor
        if (isinstance(entry.get("at_iteration"), int) and not isinstance(entry["at_iteration"], bool)
                and isinstance(short_iters, int)):
            entry["at_iteration"] = min(max(0, round(entry["at_iteration"] * ratio)),
                                        max(0, short_iters - 1))
        faults.append(entry)
    if "faults" in data:
        out["faults"] = faults
    return out
