"""The run directory files run_transport writes around the fabric (emulation/run/runner.py):
the clock pair before it starts, the fabric's fault log and counter snapshots after it stops."""
from __future__ import annotations

import json

from emulation.run import runner


def test_prepare_run_dir_makes_the_capture_folder_and_a_clock_pair(tmp_path):
    tdir = tmp_path / "mrc"
    runner._prepare_run_dir(tdir)
    assert (tdir / "pcaps").is_dir()
    clock = json.loads((tdir / "clock.json").read_text())
    assert set(clock) == {"monotonic_ns", "realtime_ns"}
    assert all(isinstance(v, int) and v > 0 for v in clock.values())


def test_copy_fabric_files_copies_what_the_fabric_left_and_nothing_else(tmp_path):
    (tmp_path / "fabric").mkdir()
    (tmp_path / "fabric" / "faults.jsonl").write_text('{"action": "link_down"}\n')
    (tmp_path / "fabric" / "queue_counters.json").write_text("{}")
    runner._copy_fabric_files(tmp_path)
    assert (tmp_path / "faults.jsonl").read_text() == '{"action": "link_down"}\n'
    assert (tmp_path / "queue_counters.json").read_text() == "{}"
    assert not (tmp_path / "trim_counters.json").exists()      # the fabric wrote none


def test_copy_fabric_files_without_a_fabric_directory_copies_nothing(tmp_path):
    runner._copy_fabric_files(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == []
