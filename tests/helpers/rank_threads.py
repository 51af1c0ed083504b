"""Every rank of a test world in its own thread (the runner gives each its own process)."""
from __future__ import annotations

import threading

from traffic.workload.comm import InMemoryHub


def run_ranks(world: int, body, timeout_s: float, errors: list | None = None) -> None:
    """body(rank) for each rank in a thread of its own; fails when a rank is still running after
    its join waited timeout_s (a hang), naming `errors` (what the other ranks raised) if given."""
    threads = [threading.Thread(target=body, args=(r,), daemon=True) for r in range(world)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout_s)
    hung = [r for r, t in enumerate(threads) if t.is_alive()]
    assert not hung, f"rank(s) {hung} hung" + (f"; errors: {errors}" if errors else "")


def run_hub_world(world: int, fn, *, comm=None, timeout_s: float = 20) -> list:
    """fn(communicator) on every rank of an in-memory world; the results in rank order. A rank
    that raises fails the hub (the others stop waiting for it) and its exception is raised here.
    `comm(hub, rank)` makes a rank's communicator (default: hub.comm(rank))."""
    hub = InMemoryHub(world)
    make = comm or (lambda hub_, rank: hub_.comm(rank))
    results, errors = [None] * world, []

    def body(rank):
        try:
            results[rank] = fn(make(hub, rank))
        except BaseException as exc:  # noqa: BLE001 - raised below, in the test's thread
            errors.append(exc)
            hub.fail(repr(exc))

    run_ranks(world, body, timeout_s, errors)
    if errors:
        raise errors[0]
    return results
