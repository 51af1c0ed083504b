"""emulation/cluster/remote_nodes.py without a server: the ssh a remote node runs and the order
in which its classes answer. (A node on a server is tests/integration/test_cluster_local_server.py's.)"""
from mininet.examples.cluster import RemoteMixin, RemoteOVSSwitch
from mininet.node import Host, OVSSwitch

from emulation.cluster import remote_nodes as R


def bare(cls, **attrs):
    """An instance without Mininet's start-up (which starts a shell), for its pure methods."""
    node = object.__new__(cls)
    node.__dict__.update(attrs)
    return node


def test_a_remote_nodes_ssh_is_mrclabs_with_the_clusters_config(monkeypatch):
    monkeypatch.setenv("MRCLAB_SSH_CONFIG", "/run/mrclab-servers/ssh_config")
    node = bare(R.ClusterHost, user="root", server="mrclab-b")
    assert node.ssh_command() == ["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5", "-F",
                                  "/run/mrclab-servers/ssh_config", "-q", "-tt", "root@mrclab-b"]
    monkeypatch.delenv("MRCLAB_SSH_CONFIG")
    assert "-F" not in node.ssh_command()


def test_mrclabs_methods_come_before_mininets_cluster_and_node_classes():
    for cls, node_cls in ((R.ClusterHost, Host), (R.ClusterOVSSwitch, OVSSwitch)):
        mro = cls.__mro__
        assert mro.index(R.MrclabSSH) < mro.index(RemoteMixin) < mro.index(node_cls)
        assert cls._popen is R.MrclabSSH._popen and cls.startShell is R.MrclabSSH.startShell
    assert issubclass(R.ClusterOVSSwitch, RemoteOVSSwitch)


def test_root_on_a_remote_server_runs_its_commands_without_sudo(monkeypatch):
    seen = []
    monkeypatch.setattr(RemoteMixin, "_popen",
                        lambda self, cmd, sudo=True, tt=True, **p: seen.append((cmd, sudo)))
    bare(R.ClusterHost, user="root", isRemote=True)._popen(["ip", "link"])
    bare(R.ClusterHost, user="alice", isRemote=True)._popen(["ip", "link"])
    bare(R.ClusterHost, user="root", isRemote=False)._popen(["ip", "link"])
    assert seen == [(["ip", "link"], False), (["ip", "link"], True), (["ip", "link"], True)]
