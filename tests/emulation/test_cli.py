"""The `mrclab` argparse tree: every subcommand declares its own options (so --help and options
before the positional work), every option has help text, bad numbers and files are a clear
error (exit 2) naming the option, and link directions survive a shell."""
from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tomllib

import pytest

from emulation import cli
from model import argtypes
from tests.helpers.cli import run_mrclab as run
from tests.helpers.paths import REPO

# The README's benchmarks (`make bench` runs them all).
BENCH_NAMES = ("codec", "goodput", "failover", "memory", "pcap", "trim", "tunnel")
# Options hidden on purpose: accepted only to explain that netem does not exist on this kernel.
HIDDEN = {("mrclab fabric", "--delay"), ("mrclab fabric", "--loss")}


def walk(parser):
    """(parser prog, action) of every action in the tree below parser."""
    for action in parser._actions:
        yield parser.prog, action
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from walk(sub)


def test_every_option_and_subcommand_has_help():
    missing = []
    for prog, action in walk(cli.build_parser()):
        name = action.option_strings[-1] if action.option_strings else action.dest
        if (prog, name) in HIDDEN or isinstance(action, (argtypes._Renamed, argtypes._Deprecated)):
            continue            # renamed options are hidden: using one names the new option
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                if not choice.help:
                    missing.append(f"{prog} {choice.dest}")
        elif not action.help or action.help == argparse.SUPPRESS:
            missing.append(f"{prog} {name}")
    assert missing == []


@pytest.mark.parametrize("argv, own_option", [
    (["run", "--help"], "--validate-only"),
    (["analyze", "--help"], "--bin-ms"),
    (["notebook", "--help"], "--out-dir"),
    (["wireshark", "--help"], "--transport"),
    (["link", "loss", "--help"], "--direction"),
    (["bench", "codec", "--help"], "--payload-bytes"),
    (["bench", "trim", "--help"], "--rounds"),
])
def test_subcommand_help_lists_its_own_options(capsys, argv, own_option):
    rc, out, err = run(capsys, *argv)
    assert rc == 0, err
    assert f"usage: mrclab {' '.join(argv[:-1])}" in out and own_option in out


def test_top_help_names_commands_not_modules(capsys):
    rc, out, _ = run(capsys, "--help")
    assert rc == 0 and "dispatches" not in out and "emulation.run.runner" not in out
    for command in ("fabric", "link", "clean", "run", "analyze", "notebook", "wireshark", "bench"):
        assert f"\n    {command}" in out


def test_bench_help_lists_every_benchmark(capsys):
    rc, out, _ = run(capsys, "bench", "--help")
    assert rc == 0
    for name in BENCH_NAMES + ("all",):
        assert f"\n    {name} " in out, name


def test_version_is_the_package_version(capsys):
    expected = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    rc, out, _ = run(capsys, "--version")
    assert rc == 0 and out.strip() == f"mrclab {expected}"


def test_options_before_the_positional(capsys):
    scenario = str(REPO / "experiments" / "demo.toml")
    rc, out, err = run(capsys, "run", "--validate-only", "--transport", "mrc", scenario)
    assert rc == 0, err
    assert f"{scenario}: ok (" in out
    rc, _, err = run(capsys, "analyze", "--bin-ms", "5", "/nonexistent/run")
    assert rc == 2 and "unrecognized" not in err and "/nonexistent/run does not exist" in err


def _not_a_capture(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("not a capture\n")
    return str(path)


def _capture_without_mrc(tmp_path):
    from scapy.layers.l2 import ARP, Ether
    from scapy.utils import wrpcap
    path = tmp_path / "arp.pcap"
    wrpcap(str(path), [Ether() / ARP()] * 3)
    return str(path)


@pytest.mark.parametrize("argv, message", [
    (["bench", "codec", "--seconds", "-1"], "argument --seconds: must be > 0, got -1"),
    (["bench", "codec", "--seconds", "nan"], "argument --seconds: expected a finite number"),
    (["bench", "codec", "--payload-bytes", "-3"], "argument --payload-bytes: must be >= 0"),
    (["bench", "pcap", "--path", "/nonexistent.pcap"], "argument --path: no such file"),
    (["bench", "pcap", "--path", _not_a_capture], "cannot read it as a capture"),
    (["bench", "pcap", "--path", _capture_without_mrc], "no MRC packets in this capture"),
    (["bench", "trim", "--rounds", "0"], "argument --rounds: must be >= 1, got 0"),
    (["bench", "goodput", "--size-mib", "0"], "argument --size-mib: must be >= 1"),
    (["analyze", "--bin-ms", "nan"], "argument --bin-ms: expected a finite number, got 'nan'"),
    (["analyze", "--bin-ms", "0"], "argument --bin-ms: must be > 0, got 0"),
    (["analyze", "--bin-ms", "-1"], "argument --bin-ms: must be > 0, got -1"),
    (["link", "--api-port", "99999", "down", "a", "b"],
     "argument --api-port: must be a TCP port in 1..65535, got 99999"),
    (["link", "--api-port", "0", "down", "a", "b"], "argument --api-port: must be a TCP port"),
    (["link", "down", "a", "b", "--api-port", "x"], "argument --api-port: expected an integer"),
    (["link", "loss", "a", "b", "inf"], "argument percent: expected a finite number"),
    (["fabric", "--host-link-mbit", "-5"], "argument --host-link-mbit: must be > 0"),
])
def test_bad_input_is_exit_2_naming_the_option(capsys, tmp_path, argv, message):
    argv = [a(tmp_path) if callable(a) else a for a in argv]
    rc, _, err = run(capsys, *argv)
    assert rc == 2, err
    assert message in err and "Traceback" not in err


def test_clean_as_a_normal_user_is_exit_2_not_a_traceback():
    def as_nobody():
        if os.geteuid() == 0:
            os.setgid(65534)
            os.setuid(65534)
    res = subprocess.run([sys.executable, "-m", "emulation.cli", "clean", "--wait-s", "0"],
                         cwd=REPO, capture_output=True, text=True, timeout=60,
                         preexec_fn=as_nobody)
    assert res.returncode == 2, res.stderr
    assert "mrclab clean: must run as root" in res.stderr and "Traceback" not in res.stderr


def test_directions_survive_a_shell():
    link = cli.build_parser()._subparsers._group_actions[0].choices["link"]
    loss = link._subparsers._group_actions[0].choices["loss"]
    [direction] = [a for a in loss._actions if "--direction" in a.option_strings]
    assert set(direction.choices) == {"forward", "reverse", "both"}
    assert all(shlex.quote(c) == c for c in direction.choices)


@pytest.mark.parametrize("direction, egress", [("forward", ["t0p0g0-e2"]),
                                               ("reverse", ["t1p0s0-e1"]),
                                               ("both", ["t0p0g0-e2", "t1p0s0-e1"])])
def test_link_loss_direction_reaches_the_controller(capsys, tmp_path, monkeypatch, direction,
                                                   egress):
    """Through the real API server: forward = packets from A (t0p0g0, whose port 2 faces spine
    0) to B (t1p0s0, whose port 1 faces group 0) are dropped at A's egress; reverse at B's."""
    from controller.api import ApiServer
    from controller.app import FabricController
    from model.topology import FabricSpec, Topology
    argvs = []
    ctl = FabricController(Topology(FabricSpec(planes=1, groups=2, spines=2, hosts_per_group=1)),
                           "ecmp", None, str(tmp_path / "faults.jsonl"),
                           run=lambda argv: argvs.append(argv) or "")
    from tests.helpers.api_token import use_token
    server = ApiServer(ctl, 0, use_token(monkeypatch)).start()
    try:      # --api-port after the action's arguments works as well as before them
        rc, out, err = run(capsys, "link", "loss", "t0p0g0", "t1p0s0", "5", "--direction",
                           direction, "--api-port", str(server.port))
    finally:
        server.stop()
    assert rc == 0, err
    touched = sorted(i for i in ("t0p0g0-e2", "t1p0s0-e1") if any(i in " ".join(a) for a in argvs))
    assert touched == egress and len(argvs) == len(egress)


def test_bench_json_prints_one_object_on_stdout(capsys):
    import json
    rc, out, err = run(capsys, "bench", "codec", "--seconds", "0.05", "--payload-bytes", "100",
                       "--json")
    assert rc == 0, err
    figures = json.loads(out)
    assert figures["payload_bytes"] == 100 and figures["fast_pkts_per_s"] > 0
    assert "codec bench (srv6, 100 B payload" in err      # the human-readable lines moved


def _interrupted(args):
    raise KeyboardInterrupt


def test_ctrl_c_is_exit_130_with_a_line_not_a_traceback(capsys):
    """Ctrl-C in any command (a calibration's trials, a run, a sweep) ends it with the shell's
    code for SIGINT, 128 + 2, and one line naming the command."""
    from emulation import cli

    assert cli._run_main("mrclab calibrate", f"{__name__}:_interrupted", None) == 130
    err = capsys.readouterr().err
    assert err.strip() == "mrclab calibrate: interrupted (Ctrl-C)"
    assert "Traceback" not in err
