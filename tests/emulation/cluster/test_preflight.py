"""The preflight's rules (emulation/cluster/preflight.py) on the facts a server reports, and its
one pass over every server with a fake runner in place of sh and ssh."""
import shlex

import pytest

from emulation.cluster import preflight as F

READY = {"sudo": "ok", "ovs": "ok", "mininet": "ok", "vxlan": "ok", "python": "3.11",
         "commit": "a" * 40, "dirty": "0", "mtu@10.0.0.1": "9050"}


def test_a_ready_server_has_no_problem():
    assert F.problems(READY, READY, 9000) == []


@pytest.mark.parametrize("change,words", [
    ({"sudo": "no"}, "not root, and sudo is missing or asks for a password"),
    ({"ovs": "no"}, "Open vSwitch does not answer `ovs-vsctl show`: run `sudo make setup` there"),
    ({"mininet": "no"}, "mnexec is missing"),
    ({"vxlan": "no"}, "no vxlan module"),
    ({"python": "none"}, "no Python at /srv/mrclab/.venv/bin/python"),
    ({"python": "3.12"}, "Python 3.12 there, 3.11 here"),
    ({"commit": "none"}, "no git checkout of the project at /srv/mrclab"),
    ({"commit": "b" * 40}, f"at commit {'b' * 12}, here {'a' * 12}"),
    ({"dirty": "3"}, "3 uncommitted changes"),
    # 9000 + 50 bytes of headers: 9049 is one short; 1500 carries a 1450-byte fabric MTU
    ({"mtu@10.0.0.1": "9049"}, "MTU 9049; a tunnelled 9000-byte packet needs 9050"),
    ({"mtu@10.0.0.1": "1500"}, "lower [fabric] mtu to 1450"),
    ({"mtu@10.0.0.1": "none"}, "no route to 10.0.0.1"),
])
def test_each_missing_thing_is_said_with_what_to_do(change, words):
    found = F.problems({**READY, **change}, READY, 9000, repo="/srv/mrclab")
    assert len(found) == 1 and words in found[0]


def test_a_script_that_stopped_early_is_said():
    facts = {k: v for k, v in READY.items() if k not in ("commit", "dirty")}
    assert F.problems(facts, READY, 9000) == [
        "reported no commit (the check script stopped early)",
        "reported no dirty (the check script stopped early)"]


def test_facts_are_read_from_the_script_output():
    out = "sudo=ok\nmtu@10.0.0.2=9050\nnoise without a sign\npython=3.11 \n"
    assert F.parse_facts(out) == {"sudo": "ok", "mtu@10.0.0.2": "9050", "python": "3.11"}


def test_the_script_names_repo_and_peers_quoted():
    text = F.facts_script("/srv/mr clab", ["10.0.0.2", "10.0.0.3"])
    assert text.startswith("repo='/srv/mr clab'\npeers='10.0.0.2 10.0.0.3'\n")
    with pytest.raises(F.vxlan.TunnelError, match="must be an IPv4 address"):
        F.facts_script("/srv", ["$(reboot)"])


def test_one_pass_over_every_server():
    """This machine runs the script with sh, the others over ssh; b is ready, c's ssh fails,
    d is on another commit. Each server checks its MTU toward the others' addresses."""
    seen = []

    def runner(argv, script):
        seen.append((argv, script))
        server = "here" if argv[:2] == ["sh", "-s"] else argv[-2]
        if server == "c":
            return 255, "", "ssh: connect to host c port 22: Connection refused\n"
        facts = dict(READY, commit="d" * 40) if server == "d" else READY
        peers = " ".join(shlex.split(script.split("\n")[1].partition("=")[2])).split()
        mtus = "".join(f"mtu@{p}=9050\n" for p in peers)
        return 0, "".join(f"{k}={v}\n" for k, v in facts.items() if "@" not in k) + mtus, ""

    addresses = {"here": "10.0.0.1", "b": "10.0.0.2", "c": "10.0.0.3", "d": "10.0.0.4"}
    results = F.run(["here", "b", "c", "d"], addresses, 9000, runner=runner)
    assert results["here"] == [] and results["b"] == []
    assert results["c"] == ["ssh c failed (ssh: connect to host c port 22: Connection refused): "
                            "it must log in without a password (ssh-copy-id c)"]
    assert "at commit dddddddddddd" in results["d"][0]
    assert seen[0][0] == ["sh", "-s"] and "peers='10.0.0.2 10.0.0.3 10.0.0.4'" in seen[0][1]
    assert seen[1][0][:5] == ["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5"]
    assert seen[1][0][-2:] == ["b", "sh -s"] and "peers=10.0.0.1\n" in seen[1][1]
    text = F.report(results)
    assert "  here: ready" in text and "  c: ssh c failed" in text
    assert F.report({"here": [], "b": []}) == "preflight: every server ready (here, b)"
