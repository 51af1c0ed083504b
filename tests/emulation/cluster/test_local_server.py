"""emulation/cluster/local_server.py without root: what a local server is made of (names,
addresses, sshd's and ssh's configuration, the server's /etc/passwd, the order of its set-up).
Starting one is tests/integration/test_cluster_local_server.py's."""
import pytest

from emulation.cluster import local_server as L


@pytest.mark.parametrize("name, index, why", [
    ("B", 0, "lower-case"), ("1b", 0, "starting with a letter"), ("b" * 32, 0, "at most 31"),
    ("b;rm", 0, "dashes"), ("b", -1, "0..63"), ("b", 64, "0..63"), ("b", True, "0..63"),
    ("b", "1", "0..63"),
])
def test_a_bad_name_or_index_is_named(name, index, why):
    with pytest.raises(L.LocalServerError, match=why):
        L.server(name, index)


def test_names_and_addresses_follow_the_index():
    srv = L.server("mrclab-b", 7)
    assert (srv.here_intf, srv.there_intf) == ("mrcmgmt7a", "mrcmgmt7b")
    assert (srv.here_address, srv.address) == ("10.213.7.1", "10.213.7.2")
    assert str(srv.state) == "/run/mrclab-servers/mrclab-b"
    # interface names fit the kernel's 15 characters at the largest index
    assert len(L.server("b", L.MAX_INDEX).here_intf) <= 15


def test_the_management_mtu_carries_a_tunnelled_jumbo_frame():
    from emulation.cluster import vxlan
    assert L.MGMT_MTU >= vxlan.underlay_mtu_needed(9000)


def test_sshd_listens_on_the_servers_address_only_and_takes_keys_only():
    text = L.sshd_config(L.server("b", 3))
    lines = set(text.splitlines())
    assert "ListenAddress 10.213.3.2" in lines
    assert sum(line.startswith("ListenAddress") for line in lines) == 1
    assert {"PasswordAuthentication no", "KbdInteractiveAuthentication no",
            "PermitRootLogin prohibit-password",
            "AuthorizedKeysFile /etc/ssh/authorized_keys"} <= lines


def test_the_client_entry_names_the_server_its_address_and_its_key():
    text = L.client_config(L.server("b", 3))
    assert text.splitlines()[:5] == ["Host b", "  HostName 10.213.3.2", "  User root",
                                     "  IdentityFile /run/mrclab-servers/b/client_key",
                                     "  IdentitiesOnly yes"]


def test_the_privilege_separation_user_is_added_with_the_first_free_system_uid():
    passwd = ("root:x:0:0:root:/root:/bin/bash\n"
              "a:x:100:100::/home/a:/bin/sh\n"
              "b:x:101:101::/home/b:/bin/sh\n"
              "c:x:1000:1000::/home/c:/bin/sh\n")
    out = L.passwd_with_privsep_user(passwd)
    assert out.startswith(passwd)
    assert out.splitlines()[-1] == "sshd:x:102:65534::/run/sshd:/usr/sbin/nologin"
    assert L.passwd_with_privsep_user(out) == out           # present already: unchanged
    # a file without a final newline still gets the user on a line of its own
    assert L.passwd_with_privsep_user("root:x:0:0::/root:/bin/sh").splitlines()[1].startswith(
        "sshd:x:100:")


def test_a_locked_root_password_is_written_as_no_password_and_nothing_else_changes():
    shadow = ("root:!$6$salt$hash:19000:0:99999:7:::\n"
              "alice:!:19000:0:99999:7:::\n"
              "bob:$6$x$y:19000:0:99999:7:::")
    assert L.shadow_with_root_unlocked(shadow) == ("root:*:19000:0:99999:7:::\n"
                                                   "alice:!:19000:0:99999:7:::\n"
                                                   "bob:$6$x$y:19000:0:99999:7:::")
    unlocked = "root:*:19000:0:99999:7:::\n"
    assert L.shadow_with_root_unlocked(unlocked) == unlocked


def test_etc_ssh_is_bound_before_run_which_holds_the_state_is_replaced():
    steps = [" ".join(a) for a in L.inside_setup(L.server("b", 0))]
    bind = steps.index("mount --bind /run/mrclab-servers/b /etc/ssh")
    passwd = steps.index("mount --bind /run/mrclab-servers/b/passwd /etc/passwd")
    shadow = steps.index("mount --bind /run/mrclab-servers/b/shadow /etc/shadow")
    run = steps.index("mount -t tmpfs -o mode=0755 tmpfs /run")
    assert max(bind, passwd, shadow) < run
    assert steps.index("mkdir -p /run/sshd /run/openvswitch /run/.cgroup") > run
    # the server's own sysfs, the cgroup mounts kept aside and moved back on top of it
    sysfs = steps.index("mount -t sysfs sysfs /sys")
    assert (steps.index("mount --rbind /sys/fs/cgroup /run/.cgroup") < sysfs
            < steps.index("mount --move /run/.cgroup /sys/fs/cgroup"))
    assert steps[-1] == "ip link set mrcmgmt0b mtu 9100 up"


def test_the_holder_ends_the_server_with_it():
    argv = L.holder_argv(L.server("b", 0))
    assert {"--net", "--mount", "--uts", "--pid", "--fork", "--kill-child"} <= set(argv)
    assert argv[-1] == "mrclab-server-b"          # the holder's argv[0], checked before a kill
    assert L.enter_argv(42, ["true"]) == ["nsenter", "--target", "42", "--net", "--mount",
                                          "--uts", "--pid", "--", "true"]
