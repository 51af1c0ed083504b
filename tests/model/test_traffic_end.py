"""The end of the timed iterations named after the last fault (model/traffic_end.py): the rule's
arithmetic, the file's round trip, bad files refused by name, and a worker's view of it."""
import os

import pytest

from model import traffic_end


def test_the_end_is_the_iteration_in_progress_plus_after_more():
    # 7 iterations done by the furthest rank: it is in iteration 7 (0-based); 6 more after it
    # are iterations 8..13, so 14 timed iterations in all
    assert traffic_end.stop_iteration(done=7, after=6, iterations=60) == 14


def test_the_end_never_exceeds_the_scenarios_count():
    assert traffic_end.stop_iteration(done=57, after=6, iterations=60) == 60
    assert traffic_end.stop_iteration(done=0, after=1, iterations=1) == 1


def test_after_below_one_is_refused():
    with pytest.raises(ValueError, match="at least 1"):
        traffic_end.stop_iteration(done=3, after=0, iterations=10)


def test_written_then_read_back(tmp_path):
    path = traffic_end.write(tmp_path, 14, "6 iterations after the last fault")
    assert path.name == traffic_end.STOP_FILE
    assert traffic_end.read(tmp_path) == 14
    assert not list(tmp_path.glob("*.tmp"))           # the rename left nothing behind


def test_no_file_is_no_end(tmp_path):
    assert traffic_end.read(tmp_path) is None


@pytest.mark.parametrize("text", ["not json", "[]", '{"iterations": 0}',
                                  '{"iterations": true}', '{"iterations": "9"}', "{}"])
def test_a_bad_file_is_refused_naming_it(tmp_path, text):
    (tmp_path / traffic_end.STOP_FILE).write_text(text)
    with pytest.raises(traffic_end.TrafficEndError, match=traffic_end.STOP_FILE):
        traffic_end.read(tmp_path)


def test_a_fifo_in_its_place_is_refused_not_waited_on(tmp_path):
    os.mkfifo(tmp_path / traffic_end.STOP_FILE)
    with pytest.raises(traffic_end.TrafficEndError, match="FIFO"):
        traffic_end.read(tmp_path)


def test_a_watch_stops_a_rank_at_the_named_iteration_and_after_it(tmp_path):
    watch = traffic_end.StopWatch(tmp_path)
    assert not watch.stops_at(0) and not watch.stops_at(500)     # nothing named yet
    traffic_end.write(tmp_path, 5, "test")
    assert not watch.stops_at(4)
    assert watch.stops_at(5)
    # a rank already past the named end (its extra iterations needed no peer) stops too
    assert watch.stops_at(9)
