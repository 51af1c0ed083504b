"""ECN skip backoff (traffic/core/evs.py EVSet.skip, MRCConfig.skip_backoff_max): an EV marked again
soon after its skip ended sits on a persistently congested path and is skipped twice as long,
up to backoff_max first skips; a mark long after the last skip starts over. Expected ends of
skip are hand arithmetic with a first skip of 1000 ns (SKIP_MEMORY = 4: "soon" is within
max(last skip, 4000 ns) of its end)."""
from model.events import Event
from tests.helpers.core_builders import make_evset
from traffic.core.evs import SKIP_MEMORY

FIRST = 1000


def ends(events, ev):
    return [e["until_ns"] for e in events if e["event"] == Event.EV_SKIP and e["ev"] == ev]


def mark(evs, ev, now, backoff_max):
    evs.skip(ev, until_ns=now + FIRST, now_ns=now, backoff_max=backoff_max)


def test_memory_is_four_first_skips():
    assert SKIP_MEMORY == 4


def test_marks_soon_after_each_skip_double_it_up_to_the_cap():
    evs, events = make_evset(ev_count=8)
    ev = evs.rotation[0]
    mark(evs, ev, 0, 8)          # skip 1000: until 1000
    mark(evs, ev, 1500, 8)       # 500 after the end (<= 4000): 2000, until 3500
    mark(evs, ev, 4000, 8)       # 500 after: 4000, until 8000
    mark(evs, ev, 8100, 8)       # 8000, until 16100
    mark(evs, ev, 16200, 8)      # 16000 capped at 8 x 1000: until 24200
    assert ends(events, ev) == [1000, 3500, 8000, 16100, 24200]


def test_echoes_during_a_skip_extend_it_without_doubling():
    evs, events = make_evset(ev_count=8)
    ev = evs.rotation[0]
    mark(evs, ev, 0, 8)          # until 1000
    mark(evs, ev, 500, 8)        # still skipped: extends to 1500, length stays 1000
    mark(evs, ev, 2000, 8)       # 500 after the end: doubles once, 2000: until 4000
    assert ends(events, ev) == [1000, 1500, 4000]


def test_a_mark_long_after_the_last_skip_starts_over():
    evs, events = make_evset(ev_count=8)
    ev = evs.rotation[0]
    mark(evs, ev, 0, 8)          # until 1000
    mark(evs, ev, 1200, 8)       # 2000: until 3200
    mark(evs, ev, 3200 + 4001, 8)   # > max(2000, 4000) after the end: back to 1000
    assert ends(events, ev) == [1000, 3200, 8201]


def test_backoff_max_1_keeps_every_skip_at_the_first_length():
    evs, events = make_evset(ev_count=8)
    ev = evs.rotation[0]
    for now in (0, 1100, 2200, 3300):
        mark(evs, ev, now, 1)
    assert ends(events, ev) == [1000, 2100, 3200, 4300]


def test_each_ev_keeps_its_own_backoff_and_a_replacement_starts_fresh():
    evs, events = make_evset(ev_count=8)
    a, b = evs.rotation[0], evs.rotation[2]
    mark(evs, a, 0, 8)
    mark(evs, a, 1100, 8)        # a: 2000, until 3100
    mark(evs, b, 1100, 8)        # b: first skip, until 2100
    assert ends(events, a) == [1000, 3100] and ends(events, b) == [2100]
    assert evs.evs[a].skip_len == 2000 and evs.evs[b].skip_len == FIRST


def test_with_every_ev_skipped_the_one_whose_skip_ends_first_is_used():
    """All EVs of a plane marked: the round robin falls back to a skipped EV, the one whose skip
    ends first (the path its backoff judges least congested), not simply the next in turn."""
    evs, _ = make_evset(ev_count=8)
    p0 = [ev for ev in evs.rotation if evs.evs[ev].plane == 0]
    # the last in turn ends first
    ends_at = {ev: 10_000 + 1000 * i for i, ev in enumerate(reversed(p0))}
    for ev, until in ends_at.items():
        evs.skip(ev, until_ns=until, now_ns=0)
    soonest = min(ends_at, key=ends_at.get)
    assert soonest == p0[-1] and len(p0) > 1
    picked = [evs.pick(100, plane_ok=lambda p: p == 0) for _ in range(3)]
    assert picked == [soonest] * 3, (picked, soonest)


def test_a_loaded_round_trip_longer_than_the_memory_still_counts_as_soon():
    """The mark of the first packet after a skip returns a loaded round trip later: with
    memory_ns (the sender passes 2 smoothed RTTs) a mark 6000 ns after the skip ended, beyond
    4 first skips, still doubles the skip; without it, it starts over."""
    for memory, want in ((8000, 2000), (0, FIRST)):
        evs, events = make_evset(ev_count=8)
        ev = evs.rotation[0]
        evs.skip(ev, until_ns=FIRST, now_ns=0, backoff_max=8, memory_ns=memory)
        evs.skip(ev, until_ns=7000 + FIRST, now_ns=7000, backoff_max=8, memory_ns=memory)
        assert ends(events, ev) == [FIRST, 7000 + want]
