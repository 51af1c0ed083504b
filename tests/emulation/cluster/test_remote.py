"""`mrclab clean --servers` (emulation/cluster/remote.py): each other server cleans itself over
ssh; failures are named per server."""
from emulation.cluster import remote as R


def test_the_remote_clean_command():
    assert R.clean_argv("root@b", "/srv/mrclab", 5.0) == [
        "ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5", "root@b",
        "sudo -n /srv/mrclab/.venv/bin/python -m emulation.cli clean --wait-s 5"]


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
