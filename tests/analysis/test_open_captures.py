"""`mrclab wireshark RUN`: a run's captures merged, one file per transport, that tshark decodes
with the shipped dissector, from the exact command line the CLI prints."""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from emulation.benches.pcap import write_bench_capture
from tests.helpers.cli import run_mrclab as run_cli

PACKETS = {"h0-p0.pcap": 5, "h2-p1.pcap": 3}


@pytest.fixture
def run_dir(tmp_path):
    """A run directory whose mrc captures are project-codec frames (emulation.benches.pcap writes
    packet i as PSN i, every fifth one a SACK with cumulative PSN i)."""
    pcaps = tmp_path / "demo-run" / "mrc" / "pcaps"
    pcaps.mkdir(parents=True)
    for name, n in PACKETS.items():
        write_bench_capture(pcaps / name, packets=n, payload=64)
    (tmp_path / "demo-run" / "tcp").mkdir()
    (tmp_path / "demo-run" / "tcp" / "events-h0.jsonl").write_text("")
    return tmp_path / "demo-run"


def printed_command(out: str, label: str) -> list[str]:
    [line] = [l for l in out.splitlines() if l.startswith(label)]
    return shlex.split(line.split(":", 1)[1])


def test_merged_capture_decodes_with_the_printed_tshark_line(capsys, monkeypatch, run_dir):
    if shutil.which("tshark") is None or shutil.which("mergecap") is None:
        pytest.fail("tshark/mergecap are not installed (scripts/setup.sh installs tshark)")
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    rc, out, err = run_cli(capsys, "wireshark", str(run_dir), "--transport", "mrc")
    assert rc == 0, err
    merged = run_dir / "analysis" / "captures-mrc.pcapng"
    assert f"merged 2 capture(s) of mrc in {run_dir} into {merged}" in out
    assert "no display" in out
    gui = printed_command(out, "GUI")
    assert gui[0] == "wireshark" and gui[-1] == str(merged) and gui[1] == "-X"
    tshark = printed_command(out, "headless")
    assert tshark[:2] == ["tshark", "-X"] and tshark[-2:] == ["-r", str(merged)]
    assert Path(tshark[2].split(":", 1)[1]).is_file()      # the shipped mrc.lua
    res = subprocess.run(tshark + ["-T", "fields", "-E", "separator=|", "-e", "_ws.col.Protocol",
                                   "-e", "mrc.psn", "-e", "mrc.sack.cum_psn"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    rows = [line.split("|") for line in res.stdout.splitlines()]
    assert len(rows) == sum(PACKETS.values())
    assert {r[0] for r in rows} == {"MRC"}
    data_psns = sorted(int(r[1]) for r in rows if r[2] == "")
    sack_psns = sorted(int(r[2]) for r in rows if r[2] != "")
    # per file: packets 0..n-1, packet 4 is the SACK (i % 5 == 4)
    assert data_psns == sorted([0, 1, 2, 3, 0, 1, 2]) and sack_psns == [4]


def test_opens_wireshark_when_a_display_exists(capsys, monkeypatch, run_dir, tmp_path):
    # No GUI can run on this headless machine: a stand-in `wireshark` records its arguments.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    record = tmp_path / "argv.txt"
    (bin_dir / "wireshark").write_text(f'#!/bin/sh\necho "$@" > {record}\n')
    (bin_dir / "wireshark").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("DISPLAY", ":0")
    rc, out, err = run_cli(capsys, "wireshark", str(run_dir))
    assert rc == 0, err
    merged = run_dir / "analysis" / "captures-mrc.pcapng"
    assert "opened: wireshark -X lua_script:" in out
    for _ in range(100):
        if record.exists() and record.read_text():
            break
        import time
        time.sleep(0.05)
    args = record.read_text().split()
    assert args[0] == "-X" and args[1].endswith("analysis/wireshark/mrc.lua") and \
        args[-1] == str(merged)
    assert "udp.ignore_ipv6_zero_checksum:TRUE" in args


@pytest.mark.parametrize("argv, message", [
    (["--transport", "roce"], "--transport roce: "),
    (["--transport", "tcp"], "no capture files"),
])
def test_bad_selection_is_exit_2_naming_it(capsys, run_dir, argv, message):
    rc, _, err = run_cli(capsys, "wireshark", str(run_dir), *argv)
    assert rc == 2 and message in err and "Traceback" not in err
    if "roce" in argv:
        assert "transports there: mrc, tcp" in err


def test_missing_run_and_missing_mergecap(capsys, monkeypatch, run_dir, tmp_path):
    rc, _, err = run_cli(capsys, "wireshark", str(tmp_path / "nope"))
    assert rc == 2 and "run directory" in err and "does not exist" in err
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    rc, _, err = run_cli(capsys, "wireshark", str(run_dir))
    assert rc == 2 and "mergecap is not installed" in err


def test_unwritable_output_is_exit_2_naming_it(capsys, run_dir, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    rc, _, err = run_cli(capsys, "wireshark", str(run_dir), "--merged-pcap",
                         str(blocker / "m.pcapng"))
    assert rc == 2 and f"cannot write the merged capture {blocker / 'm.pcapng'}" in err


def test_print_only_writes_nothing_and_prints_every_command(capsys, run_dir):
    before = sorted(p for p in run_dir.rglob("*"))
    rc, out, err = run_cli(capsys, "wireshark", str(run_dir), "--transport", "mrc", "--print-only")
    assert rc == 0, err
    assert sorted(p for p in run_dir.rglob("*")) == before      # no analysis/, no merged file
    merged = run_dir / "analysis" / "captures-mrc.pcapng"
    merge = printed_command(out, "merge")
    assert merge[:3] == ["mergecap", "-w", str(merged)]
    assert sorted(merge[3:]) == sorted(str(run_dir / "mrc" / "pcaps" / n) for n in PACKETS)
    assert printed_command(out, "headless")[-1] == str(merged)


def test_transport_is_a_closed_choice(capsys, run_dir):
    rc, _, err = run_cli(capsys, "wireshark", str(run_dir), "--transport", "rdma")
    assert rc == 2 and "invalid choice: 'rdma'" in err and "'mrc', 'roce', 'tcp'" in err


def test_the_time_base_puts_the_reports_t0_on_the_capture_clock(tmp_path):
    """Timed start 2 s (emulated) at k = 8 is 16 s of the wall monotonic clock; the realtime
    clock read 1.7e9 s + 100 ns when the monotonic one read 100 ns: t = 0 is frame.time_epoch
    1,700,000,016 s, and a packet 8 wall seconds later is 1 emulated second into the run."""
    from analysis import open_captures
    tdir = tmp_path / "mrc"
    tdir.mkdir()
    (tdir / "summary.json").write_text('{"timed_start_ns": 2000000000, "time_scale": 8}')
    (tdir / "clock.json").write_text(
        '{"monotonic_ns": 100, "realtime_ns": 1700000000000000100}')
    e0, k = open_captures.time_base(tdir)
    assert e0 == pytest.approx(1_700_000_016.0, abs=1e-6) and k == 8.0
    assert open_captures.time_base(tmp_path) is None          # no summary, no clock: nothing said


def test_each_transport_gets_its_own_file_never_one_mixed(capsys, monkeypatch, run_dir):
    """Each transport ran on its own fabric with the same addresses: its packets go to its own
    merged file (2 mrc captures -> captures-mrc, 1 roce capture -> captures-roce), and one
    --merged-pcap for both is refused, naming them."""
    if shutil.which("mergecap") is None:
        pytest.fail("mergecap is not installed (scripts/setup.sh installs tshark)")
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    roce = run_dir / "roce" / "pcaps"
    roce.mkdir(parents=True)
    write_bench_capture(roce / "h1-p0.pcap", packets=4, payload=64)
    rc, out, err = run_cli(capsys, "wireshark", str(run_dir))
    assert rc == 0, err
    for name, files in (("mrc", 2), ("roce", 1)):
        merged = run_dir / "analysis" / f"captures-{name}.pcapng"
        assert f"merged {files} capture(s) of {name} in {run_dir} into {merged}" in out
        assert merged.is_file()
    assert not (run_dir / "analysis" / "captures-all.pcapng").exists()
    rc, _, err = run_cli(capsys, "wireshark", str(run_dir), "--merged-pcap",
                         str(run_dir / "both.pcapng"))
    assert rc == 2 and "has captures of mrc, roce: add --transport" in err
