"""The fast data path over the real fabric (root): a 9000-byte-MTU fabric, endpoints receiving
through the PACKET_MMAP ring, MRC and RoCE WRITEs byte-exact, in jumbo frames; and the
reference path (one recv() per frame, 1344 B payload) on the same fabric, byte-exact too."""
import hashlib
import random

import pytest

from analysis.jsonl import read_jsonl
from emulation.network import ovs_sndbuf
from emulation.network.endpoint_process import EndpointProcess
from model.events import Event
from model.topology import FabricSpec

pytestmark = pytest.mark.integration

SIZE = 3 << 20


def transfer(c_src, c_dst, src, dst, qpn, transport, rkey, seed):
    """One WRITE-with-IMM of SIZE bytes on a new QP; returns (sender's frames, payload sha256,
    receiver's sha256 of the region)."""
    c_dst.call("reg_mr", size=SIZE, rkey=rkey, va=0)
    before = c_src.call("status")["counters"]["sent"]
    qa = c_src.call("create_qp", qpn=qpn, peer=dst, peer_qpn=qpn + 1, transport=transport)
    c_dst.call("create_qp", qpn=qpn + 1, peer=src, peer_qpn=qpn, transport=transport,
               base_rtt_ns=qa["base_rtt_ns"])
    posted = c_src.call("post_write", qpn=qpn, size=SIZE, seed=seed, remote_va=0, rkey=rkey,
                        imm=seed)
    got = c_dst.call("wait", qpn=qpn + 1, side="recv", count=1, timeout_s=120)
    assert got["completions"][0]["bytes"] == SIZE and got["completions"][0]["imm"] == seed
    frames = c_src.call("status")["counters"]["sent"] - before
    digest = c_dst.call("digest", rkey=rkey, offset=0, size=SIZE)["sha256"]
    return frames, posted["sha256"], digest


def test_fast_and_reference_paths_carry_writes_byte_exact_on_a_jumbo_fabric(tmp_path):
    from emulation.network.fabric import Fabric, run_checked
    spec = FabricSpec(planes=2, groups=2, spines=2, hosts_per_group=2, mtu=9000,
                      host_link_mbit=200, fabric_link_mbit=200)
    with Fabric(spec, routing="srv6") as fab:
        for host in (0, 2):
            out = fab.cmd_in_host(host, ["ip", "-o", "link", "show", "dev", f"h{host}-p1"])
            assert " mtu 9000 " in out, out
        mtu = run_checked(["ovs-vsctl", "get", "Interface", "t0p0g0-e1", "mtu"]).strip()
        assert mtu == "9000", mtu
        # each switch port's receive socket was born with room for 256 jumbo frames
        rx = ovs_sndbuf.ovs_port_rx_sockets(ovs_sndbuf.read_sockets(), "t0p0g0-e1")
        assert rx and all(s.rcvbuf >= ovs_sndbuf.rx_rcvbuf_for_mtu(9000) for s in rx), rx
        fast = {h: EndpointProcess(fab, h, tmp_path, {"fast_path": True}) for h in (0, 2)}
        try:
            # MRC and the RoCE baseline share the endpoint and its I/O path.
            for qpn, transport, rkey, seed in ((0x100, "mrc", 0x51, 11), (0x300, "roce", 0x52, 12)):
                frames, sent_sha, got_sha = transfer(fast[0].client, fast[2].client, 0, 2, qpn,
                                                     transport, rkey, seed)
                assert got_sha == sent_sha == hashlib.sha256(
                    random.Random(seed).randbytes(SIZE)).hexdigest()
                # 8832 B of payload per frame: about 356 data frames; 1344 B would need 2341
                assert frames < SIZE // 4000, (transport, frames)
        finally:
            for ep in fast.values():
                ep.stop()
        counters = read_jsonl(fast[2].log, [], events=(Event.COUNTERS,))[-1]
        assert sum(counters["socket_drops"].values()) == 0
        ref_dir = tmp_path / "reference"
        ref_dir.mkdir()
        ref = {h: EndpointProcess(fab, h, ref_dir, {"fast_path": False, "max_payload": 1344})
               for h in (1, 3)}
        try:
            frames, sent_sha, got_sha = transfer(ref[1].client, ref[3].client, 1, 3, 0x500,
                                                 "mrc", 0x53, 13)
            assert got_sha == sent_sha
            assert frames >= SIZE // 1344
        finally:
            for ep in ref.values():
                ep.stop()
