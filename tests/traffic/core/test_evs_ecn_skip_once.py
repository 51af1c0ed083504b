"""OCP's SACK M field "skip once" for an ECN echo (traffic/core/evs.py EVSet.skip): the echo arrives
a round trip after the marked packet, and when the skip time ends before the EV's next turn
in the round robin the EV must still miss that turn, or the echo changed nothing."""
import random

from traffic.core.evs import EVSet, PathInfo


def test_an_ecn_skip_passes_over_the_ev_at_its_next_turn_even_after_its_time():
    evs = EVSet(PathInfo((0,), 4), random.Random(1), ev_count=4, backup_count=0)
    target = evs.rotation[0]
    evs.skip(target, until_ns=10, now_ns=0)
    turn = [evs.pick(100) for _ in range(4)]          # one turn, all after the skip time
    assert target not in turn[:3] and turn.count(target) <= 1, turn
    assert [evs.pick(100) for _ in range(4)].count(target) == 1   # then back in its turn


def test_a_long_skip_still_lasts_its_time():
    evs = EVSet(PathInfo((0,), 4), random.Random(1), ev_count=4, backup_count=0)
    target = evs.rotation[0]
    evs.skip(target, until_ns=1000, now_ns=0)
    assert target not in [evs.pick(500) for _ in range(12)]     # three turns inside the time
    assert target in [evs.pick(1000) for _ in range(4)]
