"""`mrclab clean --servers` (emulation/cluster/remote.py): each other server cleans itself over
ssh; failures are named per server."""
from emulation.cluster import remote as R


def test_the_remote_clean_command(monkeypatch):
    monkeypatch.delenv("MRCLAB_SSH_CONFIG", raising=False)
    assert R.clean_argv("root@b", "/srv/mrclab", 5.0) == [
        "ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5", "root@b",
        "sh -c 'if [ \"$(id -u)\" = 0 ]; then exec \"$@\"; else exec sudo -n \"$@\"; fi' "
        "as_root /srv/mrclab/.venv/bin/python -m emulation.cli clean --wait-s 5"]


def test_a_root_login_runs_the_clean_itself_and_another_user_through_sudo(tmp_path):
    """The wrapper run by a real shell: as root the command itself, else `sudo -n` first (a
    fake sudo on PATH records that it was asked)."""
    import subprocess
    wrapped = R.clean_argv("b", "/srv", 5.0)[-1]
    fake = tmp_path / "sudo"
    fake.write_text('#!/bin/sh\necho "sudo $*"\n')
    fake.chmod(0o755)
    idu = tmp_path / "id"
    for uid, expect in (("0", "/srv/.venv/bin/python -m emulation.cli clean --wait-s 5"),
                        ("1000", "sudo -n /srv/.venv/bin/python -m emulation.cli clean "
                                 "--wait-s 5")):
        idu.write_text(f"#!/bin/sh\necho {uid}\n")
        idu.chmod(0o755)
        # `exec "$@"` of the python path would run it: echo stands in for exec's target
        script = wrapped.replace("exec \"$@\"; else", "echo \"$@\"; else")
        out = subprocess.run(["sh", "-c", script], capture_output=True, text=True,
                             env={"PATH": f"{tmp_path}:/usr/bin:/bin"}).stdout.strip()
        assert out == expect


def test_the_clusters_ssh_config_is_passed_to_every_ssh(monkeypatch):
    monkeypatch.setenv("MRCLAB_SSH_CONFIG", "/run/mrclab-servers/ssh_config")
    assert R.clean_argv("b", "/srv", 5.0)[:7] == [
        "ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5", "-F",
        "/run/mrclab-servers/ssh_config"]


def test_every_other_server_is_cleaned_and_failures_are_named():
    ran, said = [], []

    def runner(argv):
        ran.append(argv[-2])
        if argv[-2] == "c":
            return 255, "", "ssh: Could not resolve hostname c\n"
        if argv[-2] == "d":
            return 1, "", "mrclab clean: refusing while a fabric is running: held\n"
        return 0, "removed 3 OVS bridges\n", ""

    failed = R.clean_others(["here", "b", "c", "d"], "/srv", runner=runner, say=said.append)
    assert ran == ["b", "c", "d"]                   # not this machine: the caller cleans it
    assert "b: removed 3 OVS bridges" in said
    assert failed == ["c: ssh failed (ssh: Could not resolve hostname c); clean it there: "
                      "sudo mrclab clean",
                      "d: mrclab clean: refusing while a fabric is running: held"]
