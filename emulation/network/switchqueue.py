"""The switch egress buffer: how deep each switch port's queue is, and what it dropped.

Why: a switch port's queue here is the HTB qdisc on the switch-side veth. Left alone, its leaf
queue holds the interface's txqueuelen (1000 packets, ~1.3 MB, ~350 ms at 30 Mbit/s): a buffer no
datacenter switch has, in which an incast never loses a packet and only waits. A scenario can give
every switch egress port a finite drop-tail buffer instead (`[fabric] switch_buffer_kb`: a bfifo
of that many bytes under each HTB leaf class), so congestion without trimming ends in real drops,
as in a fabric of shallow-buffered switches, and every run records what each port's queue sent
and dropped (qdisc statistics, the only place the kernel counts those drops), with or without
a limit.

Pure argv builders and a parser of `tc -s -j qdisc show` here; emulation.network.fabric runs them.
"""
from __future__ import annotations

import json

MIN_BUFFER_BYTES = 3000          # two full frames: anything less cannot hold one MTU burst
MAX_BUFFER_BYTES = 64 << 20
QUEUE_HANDLES = ("51:", "52:")   # bfifo handles under the HTB leaf classes (unused elsewhere)


class QueueConfigError(ValueError):
    """A switch buffer size that cannot be configured; the message names the value."""


def validate_buffer_bytes(value) -> int | None:
    """None (the deep default) or a whole number of bytes in range; raises otherwise."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise QueueConfigError(f"switch buffer must be a whole number of bytes, got {value!r}")
    if not MIN_BUFFER_BYTES <= value <= MAX_BUFFER_BYTES:
        raise QueueConfigError(f"switch buffer of {value} bytes is outside "
                               f"{MIN_BUFFER_BYTES}..{MAX_BUFFER_BYTES}")
    return value


def buffer_argvs(intf: str, leaf_classes: list[str], limit_bytes: int) -> list[list[str]]:
    """A drop-tail byte FIFO of limit_bytes under each HTB leaf class of intf's root qdisc.

    With several leaf classes (the trimming port's header and data classes) each gets the
    limit: headers are ~1/10 of a frame and are served first, so the data class's FIFO is what
    fills."""
    validate_buffer_bytes(limit_bytes)
    if len(leaf_classes) > len(QUEUE_HANDLES):
        raise QueueConfigError(f"{intf}: at most {len(QUEUE_HANDLES)} leaf classes, "
                               f"got {leaf_classes}")
    return [["tc", "qdisc", "replace", "dev", intf, "parent", cls, "handle", handle,
             "bfifo", "limit", str(limit_bytes)]
            for cls, handle in zip(leaf_classes, QUEUE_HANDLES)]


def stats_argv(intf: str) -> list[str]:
    return ["tc", "-s", "-j", "qdisc", "show", "dev", intf]


def parse_root_stats(tc_json: str, intf: str) -> dict:
    """Counters of intf's root qdisc from `tc -s -j qdisc show dev intf`.

    The root HTB's statistics include what its leaf queues dropped (HTB counts a child's drop
    on itself), so the root alone gives the port's totals."""
    try:
        qdiscs = json.loads(tc_json)
    except ValueError as e:
        raise QueueConfigError(f"{intf}: tc printed no JSON ({e}): {tc_json[:200]!r}") from None
    if not isinstance(qdiscs, list):
        raise QueueConfigError(f"{intf}: unexpected tc output {tc_json[:200]!r}")
    for q in qdiscs:
        if isinstance(q, dict) and q.get("root"):
            return {"qdisc": q.get("kind"), "sent_bytes": int(q.get("bytes", 0)),
                    "sent_packets": int(q.get("packets", 0)), "dropped": int(q.get("drops", 0)),
                    "overlimits": int(q.get("overlimits", 0)),
                    "backlog_bytes": int(q.get("backlog", 0)), "qlen": int(q.get("qlen", 0))}
    raise QueueConfigError(f"{intf}: no root qdisc in tc output {tc_json[:200]!r}")


def totals(per_port: dict[str, dict]) -> dict:
    """Sum over ports, plus the port that dropped most."""
    out = {"ports": len(per_port), "sent_packets": 0, "dropped": 0}
    worst, worst_drops = None, 0
    for intf, c in per_port.items():
        out["sent_packets"] += c.get("sent_packets", 0)
        out["dropped"] += c.get("dropped", 0)
        if c.get("dropped", 0) > worst_drops:
            worst, worst_drops = intf, c["dropped"]
    out["most_dropping_port"] = worst
    return out
