"""mrclab argument handling: bad input -> clear message, exit 2; missing modules don't break it."""
import json
import sys

import pytest

from emulation import cli, cli_bench, cli_controller
from tests.helpers.cli import run_mrclab as run


def test_no_subcommand_is_usage_error(capsys):
    rc, out, _ = run(capsys)
    assert rc == 2 and "usage: mrclab" in out      # the help, with the exit code of a usage error


@pytest.mark.parametrize("argv", [
    ["fabric", "--planes", "0"], ["fabric", "--planes", "two"], ["fabric", "--routing", "ospf"],
    ["link", "loss", "t0p0g0", "t1p0s0", "lots"], ["link", "explode", "a", "b"],
    ["link", "loss", "a", "b", "5", "--direction", "sideways"], ["link", "down", "t0p0g0"],
    ["clear-all"],
])
def test_argument_errors_exit_2(capsys, argv):
    rc, _, err = run(capsys, *argv)
    assert rc == 2
    assert "error" in err


def test_spec_out_of_range_names_field(capsys):
    rc, _, err = run(capsys, "fabric", "--planes", "9", "--check")
    assert rc == 2 and "planes must be between 1 and 8" in err


def test_switch_buffer_out_of_range_is_refused_before_anything_starts(capsys):
    rc, _, err = run(capsys, "fabric", "--switch-buffer-kb", "1")
    assert rc == 2 and "switch buffer of 1024 bytes" in err
    rc, _, err = run(capsys, "fabric", "--switch-buffer-kb", "big")
    assert rc == 2 and "expected an integer" in err


def test_netem_flags_explained(capsys):
    rc, _, err = run(capsys, "fabric", "--delay", "10ms")
    assert rc == 2 and "netem" in err and "gray_loss" in err


def test_unknown_bench(capsys):
    rc, _, err = run(capsys, "bench", "warp")
    assert rc == 2 and "unknown benchmark 'warp'" in err and "codec" in err


def test_dispatch_passes_parsed_args_and_exit_code(capsys, monkeypatch, tmp_path):
    mod = tmp_path / "mrclab_fake_cli_mod.py"
    mod.write_text("seen = []\n"
                   "def add_arguments(p):\n    p.add_argument('run')\n"
                   "    p.add_argument('--plots', action='store_true', help='x')\n"
                   "def main(args):\n    seen.append((args.run, args.plots))\n    return 3\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(cli.ARGUMENTS, "analyze", "mrclab_fake_cli_mod:add_arguments")
    monkeypatch.delitem(sys.modules, "mrclab_fake_cli_mod", raising=False)   # fresh `seen`
    monkeypatch.setitem(cli.DISPATCH, "analyze", "mrclab_fake_cli_mod:main")
    rc, _, _ = run(capsys, "analyze", "--plots", "results/x")
    import mrclab_fake_cli_mod
    assert rc == 3 and mrclab_fake_cli_mod.seen == [("results/x", True)]


def test_bench_all_runs_every_bench_with_its_defaults(capsys, monkeypatch, tmp_path):
    (tmp_path / "mrclab_fake_bench.py").write_text(
        "def add(p):\n    p.add_argument('--n', type=int, default=4, help='x')\n"
        "def a(args):\n    print('figure a', args.n)\n    return {'n': args.n}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(cli_bench, "BENCHES", {"a": ("mrclab_fake_bench", "add", "a", "bench a")})
    rc, out, err = run(capsys, "bench", "all")
    assert rc == 0 and "figure a 4" in out and "== bench a" in out
    rc, out, err = run(capsys, "bench", "all", "--json")
    assert rc == 0 and json.loads(out) == {"a": {"n": 4}} and "figure a 4" in err


def test_import_error_inside_module_is_not_masked(monkeypatch, tmp_path):
    (tmp_path / "mrclab_broken_mod.py").write_text("import mrclab_dependency_missing_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError):
        cli.resolve("mrclab_broken_mod:main")


def test_fault_bodies():
    p = cli.build_parser()
    body = cli_controller.fault_body(p.parse_args(["link", "loss", "t0p0g0", "t1p0s0", "5",
                                                    "--direction", "forward"]))
    assert body == {"action": "gray_loss", "a": "t0p0g0", "b": "t1p0s0", "percent": 5.0,
                    "direction": "a->b"}
    assert cli_controller.fault_body(p.parse_args(["link", "blackhole", "t1p0s0"])) == \
        {"action": "blackhole", "a": "t1p0s0"}
    assert cli_controller.fault_body(
        p.parse_args(["link", "clear", "ecn", "t0p0g0", "t1p0s0"])) == \
        {"action": "ecn_clear", "a": "t0p0g0", "b": "t1p0s0"}
    flap = cli_controller.fault_body(p.parse_args(["link", "flap", "a", "b", "--count", "2"]))
    assert flap["count"] == 2


def test_bench_pcap_runs_through_the_cli(capsys):
    """`make bench` runs every bench through `mrclab bench NAME [args]`."""
    rc, out, err = run(capsys, "bench", "pcap", "--packets", "500")
    assert rc == 0, err
    assert "pcap loading, 500 packets" in out and "ratio" in out
    rc, _, err = run(capsys, "bench", "pcap", "--packets", "0")
    assert rc == 2 and "--packets: must be >= 1" in err


def test_a_controller_that_fails_is_a_message_not_a_traceback(capsys, monkeypatch):
    """The real client of a fabric that is not there: ControllerError, printed in one line."""
    import socket

    from controller.client import ControllerClient
    from emulation import cli_fabric
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed_port = s.getsockname()[1]
    client = ControllerClient(port=closed_port, timeout_s=1.0)
    monkeypatch.setattr(cli_fabric, "_fabric", lambda args: client.port_counters())
    assert cli_fabric.fabric_main(None) == 1
    err = capsys.readouterr().err
    assert err.startswith("mrclab fabric: the controller failed: ")
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_clean_servers_refuses_a_bad_list_before_cleaning(capsys, monkeypatch):
    from emulation import cli_fabric
    monkeypatch.setattr(cli_fabric, "not_root", lambda prog, why: False)
    rc, out, err = run(capsys, "clean", "--servers", "here,b,here")
    assert rc == 2 and "mrclab clean: --servers: server 'here' is listed twice" in err


def test_clean_servers_cleans_here_then_the_others(capsys, monkeypatch):
    """The local clean-up as always (faked here: it would touch this machine's fabric), then
    one remote clean per other server; a failed one makes the exit status 1."""
    from emulation import cli_fabric
    from emulation.cluster import remote
    from emulation.network import cleanup, fabric
    calls = []
    monkeypatch.setattr(cli_fabric, "not_root", lambda prog, why: False)
    monkeypatch.setattr(fabric, "acquire_fabric_lock", lambda timeout_s: 7)
    monkeypatch.setattr(fabric, "release_fabric_lock", lambda fd: calls.append(("release", fd)))
    monkeypatch.setattr(cleanup, "clean", lambda verbose: calls.append("local"))
    monkeypatch.setattr(remote, "clean_others",
                        lambda servers, wait_s: calls.append(servers) or ["b: ssh failed"])
    rc, out, err = run(capsys, "clean", "--servers", "here,b")
    assert calls == ["local", ("release", 7), ("here", "b")]
    assert rc == 1 and "mrclab clean: b: ssh failed" in err
