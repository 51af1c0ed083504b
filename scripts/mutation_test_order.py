"""pytest plugin for mutation runs: run the fastest tests first.

mutmut runs each mutant's covering tests with `-x`, so a mutant is killed as soon as one test
fails. Without an order, a mutant that a 10 ms test kills may first wait for a 20 s simulation.
The durations come from mutmut's own stats run, which the forked mutant workers inherit; outside
mutmut (or in the stats run itself, where every duration is still 0) the order is unchanged.
"""
from __future__ import annotations


def pytest_collection_modifyitems(session, config, items):
    try:
        from mutmut.state import state
    except ImportError:
        return
    durations = state().duration_by_test
    if durations:
        # a stable sort: tests of equal duration keep their file order
        items.sort(key=lambda item: durations.get(item.nodeid, 0.0))
