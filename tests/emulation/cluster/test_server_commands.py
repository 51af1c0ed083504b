"""Commands on a fabric's servers (emulation/cluster/server_commands.py): the batch script run by
a real shell (its first failure stops it and is named), the file writer, the name ssh resolves,
and this machine's commands run as they are. (A remote server's batch over ssh: the integration
test of a fabric over a local server.)"""
import stat
import subprocess

import pytest

from emulation.cluster import server_commands as C
from emulation.cluster.placement import place
from model.topology import FabricSpec, Topology


def sh(script: str) -> subprocess.CompletedProcess:
    return subprocess.run(["sh", "-s"], input=script, capture_output=True, text=True, timeout=30)


def test_a_batch_runs_in_order_and_stops_at_the_first_failure_naming_it(tmp_path):
    log = tmp_path / "log"
    done = sh(C.batch_script([["sh", "-c", f"echo one >> {log}"],
                              ["sh", "-c", "echo 'RTNETLINK answers: File exists' >&2; exit 2"],
                              ["sh", "-c", f"echo three >> {log}"]]))
    assert done.returncode == 2
    assert log.read_text() == "one\n"                     # the third never ran
    failed, said = C.batch_failure(done.stderr)
    assert failed == "sh -c 'echo '\"'\"'RTNETLINK answers: File exists'\"'\"' >&2; exit 2'"
    assert said == "RTNETLINK answers: File exists"


def test_a_batch_quotes_what_the_shell_would_split_or_expand(tmp_path):
    out = tmp_path / "a b$HOME"
    done = sh(C.batch_script([["touch", str(out)]]))
    assert done.returncode == 0, done.stderr
    assert out.exists()


def test_without_the_mark_everything_said_is_the_reason():
    assert C.batch_failure("ssh: connect to host b port 22: No route to host\n") == (
        "", "ssh: connect to host b port 22: No route to host")


def test_put_writes_stdin_with_its_mode_in_a_private_directory(tmp_path):
    path = tmp_path / "pki" / "switch.key"
    done = subprocess.run(C.put_argv(str(path), 0o600), input="KEY\n", capture_output=True,
                          text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert path.read_text() == "KEY\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_the_host_name_ssh_connects_to_comes_from_ssh_g():
    text = "user root\nhostname 10.213.0.2\nport 22\n"
    assert C.ssh_hostname(text) == "10.213.0.2"
    assert C.ssh_hostname("user root\n") is None
    assert C.ipv4_of("10.213.0.2") == "10.213.0.2"
    assert C.ipv4_of("mrclab-b") is None


def servers():
    return C.Servers(place(Topology(FabricSpec()), ["localhost", "b"], "plane"),
                     error=LookupError)


def test_this_machines_commands_run_as_they_are_and_raise_the_callers_error(tmp_path):
    s = servers()
    assert s.argv_on("localhost", ["ip", "link"]) == ["ip", "link"]
    assert s.run("localhost", ["echo", "hi"]) == "hi\n"
    (tmp_path / "x").write_text("")
    with pytest.raises(LookupError, match="exit 1"):
        s.run_batch("localhost", [["true"], ["false"], ["rm", str(tmp_path / "x")]], "step")
    assert (tmp_path / "x").exists()                    # the batch stopped at false


def test_another_servers_command_is_one_ssh_as_root():
    argv = servers().argv_on("b", ["ovs-vsctl", "show"])
    assert argv[:2] == ["ssh", "-n"] and "BatchMode=yes" in argv    # takes no terminal input
    assert "-n" not in servers().argv_on("b", ["sh", "-s"], stdin=True)
    assert argv[-2] == "b"
    assert argv[-1].endswith("as_root ovs-vsctl show")
