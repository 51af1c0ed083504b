"""Clock alignment (model/clockalign.py) with injected offsets and delays; every expected value
worked out by hand from the exchange's four times."""
import pytest

from model import clockalign as C


def exchange(t0, offset, out_ns, server_ns, back_ns):
    """The four times of one ping-pong with the server's clock `offset` ns ahead of the
    reference, `out_ns` there, `server_ns` in the server, `back_ns` back."""
    t1 = t0 + out_ns + offset
    t2 = t1 + server_ns
    t3 = t0 + out_ns + server_ns + back_ns
    return C.Exchange(t0, t1, t2, t3)


def test_one_asymmetric_exchange():
    """Server 1 ms ahead, 300 us out, 50 us inside, 500 us back: t1 = 11 300 000,
    t2 = 11 350 000, t3 = 10 850 000. offset = (1 300 000 + 500 000) / 2 = 900 000 (the
    asymmetry, (500 - 300) / 2 us, hides 100 us of it); delay = 850 000 - 50 000 = 800 000, so
    the bound is 400 000, and the true 1 000 000 lies within it."""
    e = exchange(10_000_000, 1_000_000, 300_000, 50_000, 500_000)
    assert (e.t1, e.t2, e.t3) == (11_300_000, 11_350_000, 10_850_000)
    assert e.offset_ns == 900_000 and e.delay_ns == 800_000
    est = C.estimate([e])
    assert est.error_ns == 400_000 and abs(1_000_000 - est.offset_ns) <= est.error_ns


def test_the_fastest_exchange_is_kept():
    """A symmetric exchange (100 us each way, 50 us inside) at t0 = 20 000 000 has delay
    200 000 and gives the offset exactly, at the round trip's middle 20 125 000."""
    slow = exchange(10_000_000, 1_000_000, 300_000, 50_000, 500_000)
    fast = exchange(20_000_000, 1_000_000, 100_000, 50_000, 100_000)
    est = C.estimate([slow, fast, (30_000_000, 31_400_000, 31_450_000, 30_750_000)])
    assert (est.offset_ns, est.error_ns, est.at_ns, est.exchanges) == (1_000_000, 100_000,
                                                                       20_125_000, 3)


def test_a_negative_offset():
    """Server 2.5 ms behind, 100 us each way, 0 inside: t1 = 1 000 000 + 100 000 - 2 500 000
    = -1 400 000 = t2, t3 = 1 200 000: offset = (-2 400 000 - 2 600 000) / 2 = -2 500 000."""
    e = exchange(1_000_000, -2_500_000, 100_000, 0, 100_000)
    assert e.offset_ns == -2_500_000 and e.delay_ns == 200_000


def alignment():
    """Start as the fast exchange above; 60 s later the server is 60 us further ahead
    (1 ppm): offset 1 060 000 at 60 020 125 000."""
    start = [exchange(20_000_000, 1_000_000, 100_000, 50_000, 100_000)]
    end = [exchange(60_020_000_000, 1_060_000, 100_000, 50_000, 100_000)]
    return C.align(start, end)


def test_drift_rate_and_bound():
    a = alignment()
    assert a.end.offset_ns == 1_060_000 and a.end.at_ns == 60_020_125_000
    assert a.drift_ns == 60_000
    assert a.drift_ppm == pytest.approx(1.0)            # 60 000 ns / 60e9 ns
    assert a.bound_ns == 160_000                        # 100 000 + 60 000


def test_server_times_map_to_the_reference_by_the_interpolated_offset():
    """Halfway (reference 30 020 125 000) the offset is 1 030 000; the server reads
    30 021 155 000 then. Before the start and after the end the nearer offset holds."""
    a = alignment()
    assert a.offset_at(30_020_125_000) == 1_030_000
    assert a.to_reference_ns(30_021_155_000) == 30_020_125_000
    assert a.offset_at(0) == 1_000_000 and a.offset_at(10**12) == 1_060_000
    assert a.to_reference_ns(1_000_000 + 5_000_000) == 5_000_000


def test_the_record_round_trips():
    a = alignment()
    back = C.Alignment.from_dict(a.to_dict())
    assert back == a and back.to_dict()["bound_ns"] == 160_000


@pytest.mark.parametrize("bad,words", [
    (None, "must be a table"),
    ({"start": {}}, "start.offset_ns must be a number"),
    ({"start": {"offset_ns": 1, "error_ns": -1, "at_ns": 0}}, "start.error_ns must be >= 0"),
    ({"start": {"offset_ns": 1, "error_ns": 1, "at_ns": 0}, "end": 3}, "end must be a table"),
    ({"start": {"offset_ns": 1, "error_ns": 1, "at_ns": float("nan")}}, "at_ns must be a number"),
    ({"start": {"offset_ns": 1, "error_ns": 1, "at_ns": 5},
      "end": {"offset_ns": 1, "error_ns": 1, "at_ns": 5}}, "must come after"),
])
def test_a_bad_record_is_named(bad, words):
    with pytest.raises(C.ClockError) as info:
        C.Alignment.from_dict(bad)
    assert words in str(info.value)


@pytest.mark.parametrize("times,words", [
    ((100, 0, 0, 50), "before the request left"),
    ((0, 10, 5, 100), "answered (t2 = 5) before it received"),
    ((0, 0, 1000, 500), "between receiving and answering (1000 ns) exceeds the round trip "
                        "(500 ns)"),
    ((0, 0, 0, 1.5), "t3 must be an integer"),
    ((True, 0, 0, 1), "t0 must be an integer"),
])
def test_impossible_exchanges_are_refused(times, words):
    with pytest.raises(C.ClockError) as info:
        C.Exchange(*times)
    assert words in str(info.value)


def test_no_exchange_no_estimate():
    with pytest.raises(C.ClockError, match="at least one"):
        C.estimate([])


def test_the_worst_server_against_the_bound():
    """Bounds 160 000 ns (b) and 100 000 + 0 (c); base RTT 400 us: b at 0.4 base RTTs, above
    the quarter the run is judged by; at the demo's 2.89 ms it is 0.055."""
    steady = C.align([exchange(0, 5, 100_000, 0, 100_000)],
                     [exchange(10**9, 5, 100_000, 0, 100_000)])
    worst = C.worst_bound_rtts({"b": alignment(), "c": steady}, 400_000)
    assert worst == ("b", pytest.approx(0.4)) and worst[1] > C.CLOCK_BOUND_RTTS
    assert C.worst_bound_rtts({"b": alignment()}, 2_890_000)[1] == pytest.approx(0.05536, abs=1e-5)
    assert C.worst_bound_rtts({}, 400_000) == (None, 0.0)
    with pytest.raises(C.ClockError, match="base RTT must be > 0"):
        C.worst_bound_rtts({}, 0)


def test_a_clocks_file_maps_each_server_to_its_alignment_and_names_a_bad_one():
    good = C.align([C.Exchange(0, 1_500, 1_600, 1_000)], [C.Exchange(10**9, 10**9 + 1_700,
                                                                     10**9 + 1_800, 10**9 + 1_000)])
    back = C.alignments_from_dict({"b": good.to_dict()})
    assert back["b"].bound_ns == good.bound_ns
    with pytest.raises(C.ClockError, match="server c: .*start must be a table"):
        C.alignments_from_dict({"b": good.to_dict(), "c": {"end": {}}})
    with pytest.raises(C.ClockError, match="table of servers"):
        C.alignments_from_dict([good.to_dict()])
