"""The socket buffers of ovs-vswitchd's AF_PACKET sockets: its one shared transmit socket (most
of this module) and the receive socket of each switch port (the end of this docstring).

Why this exists: the userspace datapath (datapath_type=netdev) sends every packet it outputs to
every "system" port (our switch-side veths) through ONE raw packet socket, created lazily the first
time OVS outputs anything to such a port (lib/netdev-linux.c, af_packet_sock()) and never given an
SO_SNDBUF, so its send buffer is whatever net.core.wmem_default was at that moment (212992 bytes on
Debian). Every skb waiting in a switch port's HTB queue stays charged to that socket until it
leaves the qdisc, at ~2.3 KB truesize per ~1.2 KB frame. So the whole fabric may hold only ~90
queued frames in total; past that sendmmsg() fails with ENOBUFS/EAGAIN and OVS drops the packet
with no counter anywhere (no qdisc drop, no tx_dropped, no coverage counter). An incast on a
30 Mbit/s fabric goes past 90 queued frames easily.

MIN_TX_SNDBUF = 4 MiB: the fabric-wide queued bytes it has to cover are (number of switch egress
ports: 32+ on the default fabric) x (frames an incast piles into each HTB queue) x (skb truesize
~2.3 KB per 1.2 KB frame). 4 MiB holds ~1800 frames, ~57 full frames in each of 32 ports at once,
which no short incast of ours reaches.
It is only an upper bound on memory, charged while packets really sit in queues.

How it is made big: the buffer size is fixed when the socket is born, so
  * socket not born yet -> raise net.core.wmem_default for a moment, make OVS output one frame to
    a system port of a temporary bridge (so the socket is born now, big), restore the sysctl;
  * socket born too small -> restart ovs-vswitchd (not ovsdb-server) with wmem_default raised,
    then as above (the restart kills the old socket).
The caller must hold the fabric lock (emulation.network.fabric): the restart briefly stops every bridge.
Sockets other processes create during the short window also start with the raised default; that is
harmless (a send buffer is a limit, not an allocation).

Receive side: ovs-vswitchd reads each system port through its own packet socket, created when the
port is added and never given an SO_RCVBUF, so its receive buffer is net.core.rmem_default at
that moment (212992 bytes on Debian): ~12 jumbo frames of ~16.6 KB truesize. A sender bursting
faster than a CPU-starved vswitchd reads overflows it and the frame is dropped with no OVS
counter (`ss -0 -m -p` shows it as skmem d<N>). The fabric therefore raises rmem_default to rx_rcvbuf_for_mtu() while
it adds its ports (raised_rmem_default) and restores it after.

The parsing/decision part is pure (unit-tested on recorded `ss -0 -m -n -p` output); the adapter
(ensure_ovs_tx_buffer) runs the commands, each checked.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass

from emulation.network import cleanup
from model.proc import run_checked as run_command

MIN_TX_SNDBUF = 4 * 1024 * 1024
# The 4 MiB above covers TX_FRAMES_IN_FLIGHT frames of 1500 bytes. Jumbo frames cost more per
# frame: an skb's truesize is its data buffer (frame + headroom + skb_shared_info, rounded up to
# the kmalloc power of two) plus struct sk_buff, so ~2.3 KB at MTU 1500 but ~16.6 KB at 9000.
# Without shaping, queued frames wait in the receiving CPU's backlog (netdev_max_backlog, 5000
# here) still charged to this socket: at MTU 9000 a 4 MiB buffer holds only ~250 of them.
TX_FRAMES_IN_FLIGHT = MIN_TX_SNDBUF // 2304
# Frames one switch port's receive socket can hold while ovs-vswitchd is not scheduled: a 256-frame
# burst fits without a silent drop: 4.3 MB at MTU 9000, 590 KB at 1500 (a limit, not an allocation).
RX_FRAMES_PER_PORT = 256
RMEM_DEFAULT_PATH = "/proc/sys/net/core/rmem_default"
SKB_HEADROOM_AND_SHARED_INFO = 64 + 320
SKB_STRUCT_BYTES = 256
OVS_PROCESS = "ovs-vswitchd"
# `ss` prints a packet socket's local address as [protocol]:interface; the tx socket is created
# with protocol 0 and never bound ("[0]:*"); the per-port rx sockets are "*:<ifname>" (ETH_P_ALL).
TX_LOCAL_ADDRESS = "[0]:*"

OVS_CTL = "/usr/share/openvswitch/scripts/ovs-ctl"
WMEM_DEFAULT_PATH = "/proc/sys/net/core/wmem_default"
SS_ARGV = ["ss", "-0", "-m", "-n", "-p"]
# One minimal Ethernet frame: broadcast dst, locally administered src, EtherType 0x88b5 (IEEE
# "local experimental"), zero padding to the 60-byte minimum. Nobody listens on the probe veth.
PROBE_FRAME_HEX = "ffffffffffff" + "020000000001" + "88b5" + "00" * 46


# ---------------------------------------------------------------- pure part


def frame_truesize(mtu: int) -> int:
    """Estimated skb truesize of one full frame of `mtu` bytes (Ethernet header included)."""
    if isinstance(mtu, bool) or not isinstance(mtu, int) or mtu <= 0:
        raise ValueError(f"mtu must be a positive integer, got {mtu!r}")
    data = mtu + 14 + SKB_HEADROOM_AND_SHARED_INFO
    return (1 << (data - 1).bit_length()) + SKB_STRUCT_BYTES


def tx_sndbuf_for_mtu(mtu: int) -> int:
    """Send buffer for TX_FRAMES_IN_FLIGHT full frames of `mtu`, never below MIN_TX_SNDBUF."""
    return max(MIN_TX_SNDBUF, TX_FRAMES_IN_FLIGHT * frame_truesize(mtu))


def rx_rcvbuf_for_mtu(mtu: int) -> int:
    """Receive buffer for RX_FRAMES_PER_PORT full frames of `mtu` on one switch port's socket."""
    return RX_FRAMES_PER_PORT * frame_truesize(mtu)


@dataclass(frozen=True)
class PacketSocket:
    """One line of `ss -0 -m -n -p` (an AF_PACKET socket)."""
    netid: str                       # p_raw | p_dgr
    local: str                       # "[0]:*", "*:t0p0g0-e1", ...
    users: tuple[tuple[str, int, int], ...]   # (process name, pid, fd)
    sndbuf: int | None               # skmem tb
    wmem_alloc: int | None           # skmem t (bytes charged right now)
    rcvbuf: int | None = None        # skmem rb
    drops: int | None = None         # skmem d (frames dropped: receive buffer full)

    @property
    def processes(self) -> set[str]:
        return {name for name, _pid, _fd in self.users}

    @property
    def pids(self) -> set[int]:
        return {pid for _name, pid, _fd in self.users}


_USER_RE = re.compile(r'\("([^"]*)",pid=(\d+),fd=(\d+)\)')
_SKMEM_RE = re.compile(r"skmem:\(([^)]*)\)")
_SKMEM_FIELD_RE = re.compile(r"([a-z_]+?)(\d+)$")


def _parse_skmem(text: str) -> dict[str, int]:
    fields = {}
    for item in text.split(","):
        m = _SKMEM_FIELD_RE.match(item.strip())
        if m:
            fields[m.group(1)] = int(m.group(2))
    return fields


def parse_ss_packet_sockets(text: str) -> list[PacketSocket]:
    """`ss -0 -m -n -p` output (with or without -a's State column; skmem on the same line or on
    a continuation line) -> packet sockets. Lines that are not packet sockets are ignored."""
    records: list[str] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        if line[:1].isspace() and records:
            records[-1] += " " + line.strip()     # ss puts details on an indented line sometimes
        elif line.startswith("p_"):
            records.append(line)
    out = []
    for rec in records:
        tokens = rec.split()
        i = 1 if len(tokens) > 1 and tokens[1].isdigit() else 2   # optional State column (-a)
        if len(tokens) < i + 3:
            raise ValueError(f"unexpected ss packet socket line: {rec!r}")
        skmem = _SKMEM_RE.search(rec)
        mem = _parse_skmem(skmem.group(1)) if skmem else {}
        out.append(PacketSocket(
            netid=tokens[0], local=tokens[i + 2],
            users=tuple((n, int(p), int(f)) for n, p, f in _USER_RE.findall(rec)),
            sndbuf=mem.get("tb"), wmem_alloc=mem.get("t"), rcvbuf=mem.get("rb"),
            drops=mem.get("d")))
    return out


def ovs_tx_sockets(sockets: list[PacketSocket]) -> list[PacketSocket]:
    """The shared transmit socket(s) of ovs-vswitchd: raw, protocol 0, bound to no interface."""
    return [s for s in sockets if s.netid == "p_raw" and s.local == TX_LOCAL_ADDRESS
            and OVS_PROCESS in s.processes]


def ovs_port_rx_sockets(sockets: list[PacketSocket], ifname: str) -> list[PacketSocket]:
    """ovs-vswitchd's receive socket(s) of switch port `ifname` ("*:<ifname>")."""
    return [s for s in sockets if s.local == f"*:{ifname}" and OVS_PROCESS in s.processes]


@dataclass(frozen=True)
class TxBufferVerdict:
    action: str          # "ok" | "create" (socket not born yet) | "restart" (born too small)
    reason: str


def decide(sockets: list[PacketSocket], min_bytes: int = MIN_TX_SNDBUF) -> TxBufferVerdict:
    """What to do so ovs-vswitchd's transmit socket has a send buffer >= min_bytes."""
    if not isinstance(min_bytes, int) or isinstance(min_bytes, bool) or min_bytes <= 0:
        raise ValueError(f"min_bytes must be a positive int, got {min_bytes!r}")
    tx = ovs_tx_sockets(sockets)
    if not tx:
        return TxBufferVerdict("create", "ovs-vswitchd has no transmit packet socket yet")
    unknown = [s for s in tx if s.sndbuf is None]
    if unknown:
        raise ValueError(f"ss shows no skmem tb for the OVS transmit socket {unknown[0]}")
    small = [s for s in tx if s.sndbuf < min_bytes]
    if small:
        desc = ", ".join(f"pid {sorted(s.pids)} tb={s.sndbuf}" for s in small)
        return TxBufferVerdict("restart", f"OVS transmit socket send buffer too small ({desc}; "
                                          f"need >= {min_bytes})")
    return TxBufferVerdict("ok", f"OVS transmit socket send buffer tb={min(s.sndbuf for s in tx)}")


# ---------------------------------------------------------------- adapter


class SendBufferError(RuntimeError):
    """A step of sizing the send buffer failed; the message names the step and the command.
    emulation.network.fabric raises it on as a FabricError (this module does not import the fabric,
    which calls it)."""


def run_checked(argv: list[str], timeout: float = 60, what: str = "") -> str:
    return run_command(argv, timeout=timeout, what=what, error=SendBufferError)


def read_sockets() -> list[PacketSocket]:
    return parse_ss_packet_sockets(run_checked(SS_ARGV, timeout=10,
                                               what="listing packet sockets"))


def current_verdict(min_bytes: int = MIN_TX_SNDBUF) -> TxBufferVerdict:
    return decide(read_sockets(), min_bytes)


def _read_sysctl(path: str) -> int:
    with open(path) as f:
        return int(f.read().strip())


def _write_sysctl(path: str, value: int) -> None:
    try:
        with open(path, "w") as f:
            f.write(f"{int(value)}\n")
    except OSError as e:
        raise SendBufferError(f"setting {path} to {value} failed: {e}") from None


def read_wmem_default() -> int:
    return _read_sysctl(WMEM_DEFAULT_PATH)


def write_wmem_default(value: int) -> None:
    _write_sysctl(WMEM_DEFAULT_PATH, value)


def restart_vswitchd() -> None:
    """Stop and start ovs-vswitchd only (ovsdb-server and its database stay), the way
    scripts/setup.sh starts it; returns once it answers again."""
    run_checked([OVS_CTL, "stop", "--no-ovsdb-server"], timeout=60,
                what="stopping ovs-vswitchd")
    run_checked([OVS_CTL, "start", "--no-ovsdb-server", "--no-monitor"], timeout=60,
                what="starting ovs-vswitchd")
    run_checked(["ovs-appctl", "--timeout=10", "version"], timeout=20,
                what="ovs-vswitchd after restart")


def remove_probe() -> None:
    """Delete the temporary bridge and veth pair (checked; absent is fine)."""
    run_checked(["ovs-vsctl", "--timeout=20", "--", "--if-exists", "del-br",
                 cleanup.SNDBUF_PROBE_BRIDGE], what="removing the sndbuf probe bridge")
    links = set(cleanup.root_links())
    # The userspace bridge may leave a tap named after itself; deleting one veth end deletes both.
    for name in (cleanup.SNDBUF_PROBE_BRIDGE, cleanup.SNDBUF_PROBE_VETHS[0]):
        if name in links:
            run_checked(["ip", "link", "del", "dev", name],
                        what="removing the sndbuf probe interface")


def output_probe_frame() -> None:
    """Make ovs-vswitchd output one frame to a system port: temporary netdev bridge + veth, a
    packet-out to the veth port. Leaves the probe in place (the caller removes it)."""
    port, peer = cleanup.SNDBUF_PROBE_VETHS
    bridge = cleanup.SNDBUF_PROBE_BRIDGE
    run_checked(["ip", "link", "add", port, "type", "veth", "peer", "name", peer],
                what="creating the sndbuf probe veth")
    for name in (port, peer):
        run_checked(["ip", "link", "set", "dev", name, "up"], what="sndbuf probe veth up")
    run_checked(["ovs-vsctl", "--timeout=20",
                 "--", "add-br", bridge,
                 "--", "set", "bridge", bridge, "datapath_type=netdev", "fail_mode=secure",
                 "--", "add-port", bridge, port,
                 "--", "set", "interface", port, "ofport_request=1"],
                what="creating the sndbuf probe bridge")
    run_checked(["ovs-ofctl", "packet-out", bridge,
                 f"in_port=controller,packet={PROBE_FRAME_HEX},actions=output:1"],
                what="sending the sndbuf probe frame")


def _wait_for_socket(min_bytes: int, timeout_s: float) -> TxBufferVerdict:
    deadline = time.monotonic() + timeout_s
    while True:
        verdict = current_verdict(min_bytes)
        if verdict.action != "create" or time.monotonic() >= deadline:
            return verdict
        time.sleep(0.05)


def ensure_ovs_tx_buffer(min_bytes: int = MIN_TX_SNDBUF, wait_s: float = 5.0) -> TxBufferVerdict:
    """Make sure ovs-vswitchd's shared transmit socket has a send buffer >= min_bytes (see the
    module docstring). Caller holds the fabric lock. Returns the final verdict ("ok"); raises
    SendBufferError naming the failed step. wmem_default and the probe are always restored and
    removed."""
    verdict = current_verdict(min_bytes)
    if verdict.action == "ok":
        return verdict
    steps = []
    old_wmem = read_wmem_default()
    raised = old_wmem < min_bytes
    if raised:
        write_wmem_default(min_bytes)
        steps.append(f"wmem_default {old_wmem} -> {min_bytes}")
    try:
        try:
            if verdict.action == "restart":
                restart_vswitchd()
                steps.append("restarted ovs-vswitchd")
                verdict = current_verdict(min_bytes)
            if verdict.action == "create":
                remove_probe()               # a crashed earlier attempt may have left it
                output_probe_frame()
                steps.append(f"probe frame out of {cleanup.SNDBUF_PROBE_BRIDGE}")
                verdict = _wait_for_socket(min_bytes, wait_s)
        finally:
            remove_probe()
    finally:
        if raised:
            write_wmem_default(old_wmem)
    if verdict.action != "ok":
        raise SendBufferError(f"could not give ovs-vswitchd's transmit socket a {min_bytes}-byte "
                              f"send buffer: {verdict.reason} (after: {'; '.join(steps)}; "
                              f"see `{' '.join(SS_ARGV)}`)")
    return verdict


class raised_rmem_default:
    """`with raised_rmem_default(n):` net.core.rmem_default is at least n inside (the switch ports
    added meanwhile get receive sockets of n bytes), restored on the way out, error or not."""

    def __init__(self, min_bytes: int):
        self.min_bytes = min_bytes
        self.old: int | None = None

    def __enter__(self):
        self.old = _read_sysctl(RMEM_DEFAULT_PATH)
        if self.old < self.min_bytes:
            _write_sysctl(RMEM_DEFAULT_PATH, self.min_bytes)
        return self

    def __exit__(self, *exc):
        if self.old is not None and self.old < self.min_bytes:
            _write_sysctl(RMEM_DEFAULT_PATH, self.old)
        return False
