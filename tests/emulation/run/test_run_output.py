"""The terminal table of a run (emulation/run/run_output.py): it says when its times are the emulated
world's of a time-scaled run."""
from emulation.run.run_output import comparison_table


def test_the_table_says_times_are_emulated():
    rows = [{"transport": "mrc", "verified": True, "time_scale": 4.0}]
    assert "time_scale 4: times are the emulated world's" in comparison_table(rows)
    rows[0]["time_scale"] = 1.0
    assert "time_scale" not in comparison_table(rows)


def test_the_table_says_what_was_denied_and_how_long_after_the_fault():
    rows = [{"transport": "mrc", "verified": True, "detection_ms": 1834.4,
             "denied": [{"link": "t0p0g0~t1p0s0", "t_ns": 5, "reason": "path prober: 8 lossy"},
                        {"plane": 1, "t1": 0, "t_ns": 9, "reason": ""}]}]
    lines = comparison_table(rows).splitlines()
    assert lines[-2:] == [
        "mrc: denied link t0p0g0~t1p0s0, 1834 ms after the fault (path prober: 8 lossy)",
        "mrc: denied plane 1, t1 0 (no reason)"]
    assert "denied" not in comparison_table([{"transport": "mrc", "verified": True}])
