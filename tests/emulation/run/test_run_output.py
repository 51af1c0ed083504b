"""The terminal table of a run (emulation/run/run_output.py): it says when its times are the emulated
world's of a time-scaled run."""
from emulation.run.run_output import comparison_table


def test_the_table_says_times_are_emulated():
    rows = [{"transport": "mrc", "verified": True, "time_scale": 4.0}]
    assert "time_scale 4: times are the emulated world's" in comparison_table(rows)
    rows[0]["time_scale"] = 1.0
    assert "time_scale" not in comparison_table(rows)
