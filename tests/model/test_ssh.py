"""How a server is reached (model/ssh.py): the ssh options, the cluster's ssh_config from the
environment, a command as root quoted for the remote shell, stdin only when asked for, and a
command tied to its connection (run by a real shell here, standing for the server's)."""
import os
import shlex
import signal
import subprocess
import time

import pytest

from model import ssh


def test_the_clusters_ssh_config_is_passed_when_named():
    assert ssh.ssh_base({}) == ["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5"]
    assert ssh.ssh_base({ssh.SSH_CONFIG_ENV: "/run/x/ssh_config"})[-2:] == [
        "-F", "/run/x/ssh_config"]


def test_a_root_command_is_one_quoted_string_that_the_remote_shell_runs_as_given(tmp_path):
    argv = ssh.root_argv("b", ["touch", str(tmp_path / "a b$HOME")], environ={})
    assert argv[:2] == ["ssh", "-n"] and argv[-2] == "b"
    # what the server's login shell does with the last word: run it (here, as this user)
    subprocess.run(["sh", "-c", argv[-1]], check=True, timeout=30)
    assert (tmp_path / "a b$HOME").exists()
    assert shlex.split(argv[-1])[:2] == ["sh", "-c"]


def test_stdin_is_read_only_when_asked_for():
    assert "-n" not in ssh.root_argv("b", ["sh", "-s"], stdin=True, environ={})


def test_a_tied_command_stops_when_its_connection_closes(tmp_path):
    # the shell here stands for the server's: its stdin is what ssh's channel would be
    pid_file = tmp_path / "pid"
    proc = subprocess.Popen(ssh.tied_to_connection(
        ["sh", "-c", f"echo $$ > {pid_file}; exec sleep 60"]), stdin=subprocess.PIPE)
    deadline = time.monotonic() + 10
    while not pid_file.exists() or not pid_file.read_text().strip():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    child = int(pid_file.read_text())
    proc.stdin.close()                                  # the connection drops
    assert proc.wait(timeout=10) == 128 + signal.SIGTERM
    assert not os.path.exists(f"/proc/{child}") or _zombie(child)


def test_a_tied_command_that_ends_by_itself_keeps_its_status_and_leaves_nothing():
    proc = subprocess.Popen(ssh.tied_to_connection(["sh", "-c", "exit 3"]),
                            stdin=subprocess.PIPE, start_new_session=True)
    assert proc.wait(timeout=10) == 3                   # its connection still open
    time.sleep(0.2)
    # nothing of it is left in its process group (the watcher stopped with it)
    assert subprocess.run(["pgrep", "-g", str(proc.pid)], capture_output=True).returncode == 1
    proc.stdin.close()


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] == "Z"
    except OSError:
        return True


def test_a_signal_line_reaches_the_tied_command_and_the_connection_stays(tmp_path):
    """ssh forwards no signal: the tie carries it. The command (a shell standing for a worker)
    records SIGUSR1 and keeps running; the connection's end still stops it."""
    mark = tmp_path / "usr1"
    proc = subprocess.Popen(ssh.tied_to_connection(
        ["sh", "-c", f"trap 'echo got > {mark}' USR1; echo up > {tmp_path}/up; "
                     "while :; do sleep 0.05; done"]), stdin=subprocess.PIPE)
    deadline = time.monotonic() + 10
    while not (tmp_path / "up").exists():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    proc.stdin.write(ssh.signal_line(signal.SIGUSR1))
    proc.stdin.flush()
    while not mark.exists():
        assert time.monotonic() < deadline, "SIGUSR1 never arrived"
        time.sleep(0.05)
    assert proc.poll() is None                          # a forwarded signal, not the end
    proc.stdin.close()
    assert proc.wait(timeout=10) == 128 + signal.SIGTERM


def test_only_the_forwarded_signals_have_a_line():
    assert ssh.signal_line(signal.SIGUSR1) == b"USR1\n"
    with pytest.raises(ValueError, match="not KILL"):
        ssh.signal_line(signal.SIGKILL)
