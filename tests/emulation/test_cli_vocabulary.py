"""One CLI vocabulary: one spelling per concept (old spellings refused with the new name),
closed sets as choices, help on bare command groups, exit codes in `mrclab run --help`, every
error of a scenario file at once, `mrclab run NAME`, range checks on every link command before
the controller is asked, `make clean` that cleans the fabric only."""
from __future__ import annotations

import re
import socket
import subprocess

import pytest

from emulation.run import run_summary
from tests.helpers.cli import run_mrclab as run
from tests.helpers.paths import REPO


@pytest.mark.parametrize("argv, old, new", [
    (["run", "demo", "--validate-only", "--out", "x"], "--out", "--out-dir"),
    (["analyze", "latest", "--out", "x"], "--out", "--out-dir"),
    (["notebook", "latest", "--out", "x"], "--out", "--out-dir"),
    (["wireshark", "latest", "--out", "x"], "--out", "--merged-pcap"),
    (["sweep", "s.toml", "--out", "x"], "--out", "--out-dir"),
    (["compare", "a", "b", "--out", "x"], "--out", "--figure"),
    (["bench", "fidelity", "--out", "x"], "--out", "--out-dir"),
    (["fabric", "--host-mbit", "10"], "--host-mbit", "--host-link-mbit"),
    (["fabric", "--fabric-mbit", "10"], "--fabric-mbit", "--fabric-link-mbit"),
])
def test_old_spelling_is_refused_naming_the_new_one(capsys, argv, old, new):
    rc, _, err = run(capsys, *argv)
    assert rc == 2
    assert f"{old} was renamed: use {new}" in err


def test_link_rate_flags_spell_the_scenario_keys(capsys):
    rc, out, _ = run(capsys, "fabric", "--help")
    assert rc == 0
    # [fabric] host_link_mbit / fabric_link_mbit in a scenario file
    assert "--host-link-mbit" in out and "--fabric-link-mbit" in out
    assert "--host-mbit " not in out and "--fabric-mbit " not in out


@pytest.mark.parametrize("argv, lists", [
    ([], ("fabric", "link", "run", "bench", "scenario")),
    (["link"], ("down", "loss", "blackhole", "clear")),
    (["bench"], ("codec", "goodput", "all")),
    (["scenario"], ("keys",)),
])
def test_a_bare_command_group_prints_its_help(capsys, argv, lists):
    rc, out, err = run(capsys, *argv)
    assert rc == 2                         # a missing argument, as argparse exits for one
    assert "usage: mrclab" in out and "Traceback" not in err and "error" not in err
    for word in lists:
        assert re.search(rf"^\s+{word}\b", out, re.M), word


def test_run_help_lists_every_exit_code_from_the_constants(capsys):
    rc, out, _ = run(capsys, "run", "--help")
    assert rc == 0
    epilog = out[out.index("exit codes:"):]
    codes = [int(m) for m in re.findall(r"^\s+(\d+)\s", epilog, re.M)]
    assert codes == [0, 1, 2, 3, 4, 130]
    assert codes == [run_summary.EXIT_OK, run_summary.EXIT_NOT_VERIFIED,
                     run_summary.EXIT_BAD_SCENARIO, run_summary.EXIT_FAULT_NOT_EFFECTIVE,
                     run_summary.EXIT_FIDELITY, run_summary.EXIT_INTERRUPTED]


BAD = """name = "bad"
bogus = 1
[fabric]
planes = 0
mtu = 100
[collective]
iterations = "x"
message_bytes = 6
[[faults]]
at_s = 1
action = "link_down"
a = "t0p9g0"
b = "t1p0s0"
[[faults]]
at_s = -1
action = "link_up"
a = "t0p0g0"
b = "t1p0s0"
"""


def test_validate_only_reports_every_error_of_the_file(capsys, tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(BAD)
    rc, _, err = run(capsys, "run", str(path), "--validate-only")
    assert rc == 2 and "Traceback" not in err
    # one line per error, each naming its line and key (counted by hand from BAD above)
    for line, where in ((2, "bogus"), (4, "[fabric] planes"), (5, "[fabric] mtu"),
                        (7, "[collective] iterations"), (8, "[collective] message_bytes"),
                        (12, "[[faults]] #1 a"), (15, "[[faults]] #2 at_s")):
        assert f"{path}:{line}: {where}: " in err, where
    assert err.count(f"{path}:") == 7


def test_run_name_finds_the_shipped_scenario(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)                # not the repository: the shipped copy is found
    rc, out, err = run(capsys, "run", "demo", "--validate-only")
    assert rc == 0, err
    assert "demo: ok (" in out
    rc, _, err = run(capsys, "run", "no-such-scenario", "--validate-only")
    assert rc == 2
    assert "no experiments/no-such-scenario.toml" in err and "shipped scenarios: demo," in err


def test_run_name_prefers_the_working_directory_copy(capsys, tmp_path, monkeypatch):
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "mine.toml").write_text(BAD)
    monkeypatch.chdir(tmp_path)
    rc, _, err = run(capsys, "run", "mine", "--validate-only")
    assert rc == 2 and "experiments/mine.toml:4: [fabric] planes" in err


def _listening_port():
    """A port on which something accepts: a controller that would record a request."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    return srv


@pytest.mark.parametrize("argv, message", [
    (["loss", "t0p0g0", "t1p0s1", "150"], "argument percent: must be in [0, 100], got 150"),
    (["loss", "t0p0g0", "t1p0s1", "-1"], "argument percent: must be in [0, 100], got -1"),
    (["degrade", "t0p0g0", "t1p0s1", "0"], "argument fraction: must be in (0, 1], got 0"),
    (["degrade", "t0p0g0", "t1p0s1", "1.5"], "argument fraction: must be in (0, 1], got 1.5"),
    (["ecn", "t0p0g0", "t1p0s1", "0"], "argument rate_mbit: must be in (0, 100000.0], got 0"),
    (["flap", "t0p0g0", "t1p0s1", "--period-s", "0.001"], "argument --period-s: must be in "
                                                          "[0.02, 3600.0], got 0.001"),
    (["flap", "t0p0g0", "t1p0s1", "--count", "0"], "argument --count: must be an integer in "
                                                   "1..10000, got 0"),
])
def test_link_values_out_of_range_never_reach_the_controller(capsys, argv, message):
    srv = _listening_port()
    srv.settimeout(0.2)
    try:
        rc, _, err = run(capsys, "link", "--api-port", str(srv.getsockname()[1]), *argv)
        assert rc == 2 and message in err
        with pytest.raises(socket.timeout):
            srv.accept()                      # nothing connected: refused before sending
    finally:
        srv.close()


def test_make_clean_keeps_the_build_and_distclean_removes_it():
    plan = subprocess.run(["make", "-n", "clean"], cwd=REPO, capture_output=True, text=True,
                          check=True).stdout
    assert "rm " not in plan and "mrclab clean" in plan      # the fabric's cleanup, nothing else
    plan = subprocess.run(["make", "-n", "distclean"], cwd=REPO, capture_output=True, text=True,
                          check=True).stdout
    assert re.search(r"rm -rf .*\.venv", plan) and re.search(r"rm -rf .*\bbuild\b", plan)


@pytest.mark.parametrize("argv", [["-m", "emulation.config.scenario_schema"],
                                  ["-m", "emulation.cli", "scenario", "keys"]])
def test_key_reference_survives_a_reader_that_stops_early(argv):
    """`... | head -1`: the reader closes the pipe early; no BrokenPipeError traceback. The
    read end is closed before the interpreter has started, so every write meets a closed pipe."""
    import sys
    proc = subprocess.Popen([sys.executable, *argv], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0
    assert "Traceback" not in err and "BrokenPipe" not in err


# One name for the output directory in every command that writes one.
@pytest.mark.parametrize("command", [["run", "demo"], ["analyze"], ["notebook"], ["sweep", "s"],
                                     ["fabric"], ["bench", "fidelity"]])
def test_every_output_directory_is_out_dir(capsys, command):
    rc, out, _ = run(capsys, *command, "--help")
    assert rc == 0 and "--out-dir" in out
    assert "--results-dir" not in out and "--run-dir" not in out      # hidden old names


@pytest.mark.parametrize("old", ["--results-dir"])
def test_an_old_output_name_still_works_and_names_the_new_one(capsys, tmp_path, old):
    from emulation.run import runner
    args = runner.parse_args(["demo", old, str(tmp_path), "--validate-only"])
    assert args.out_dir == str(tmp_path)
    assert f"{old} is deprecated: use --out-dir" in capsys.readouterr().err


def test_fabric_run_dir_is_an_alias_of_out_dir(capsys, tmp_path):
    from emulation import cli
    args = cli.build_parser(["fabric"]).parse_args(["fabric", "--run-dir", str(tmp_path)])
    assert args.out_dir == str(tmp_path)
    assert "--run-dir is deprecated: use --out-dir" in capsys.readouterr().err


def test_fabric_defaults_to_the_demos_mtu(capsys):
    import tomllib
    from emulation import cli
    demo = tomllib.loads((REPO / "experiments" / "demo.toml").read_text())
    assert cli.build_parser(["fabric"]).parse_args(["fabric"]).mtu == demo["fabric"]["mtu"]


@pytest.mark.parametrize("command", [["run", "demo"], ["analyze"], ["top"], ["compare", "a", "b"],
                                     ["bench", "codec"]])
def test_every_command_with_a_result_has_json(capsys, command):
    rc, out, _ = run(capsys, *command, "--help")
    assert rc == 0 and "--json" in out


def test_no_token_asks_whether_a_fabric_runs_once(capsys, tmp_path, monkeypatch):
    from controller import api_auth
    monkeypatch.delenv(api_auth.TOKEN_ENV, raising=False)
    monkeypatch.setattr(api_auth, "token_path",
                        lambda port, run_dir=None: str(tmp_path / f"api-token-{port}"))
    rc, _, err = run(capsys, "link", "--api-port", "1", "down", "t0p0g0", "t1p0s1")
    assert rc == 1 and "no API token" in err
    assert err.count("fabric running") == 1, err
