"""`mrclab bench goodput|failover|memory|cpu`: one MRC QP between two endpoint processes of a
real fabric (h0 in group 0 to h2 in group 1), driven over their control sockets."""
from __future__ import annotations

import time

from model.argtypes import positive_int
from analysis import recovery
from analysis.jsonl import read_jsonl
from emulation.network.endpoint_process import EndpointProcess
from emulation.network.fabric import Fabric
from model.events import Event
from model.topology import FabricSpec
from traffic.nic.endpoint_support import payload_for_mtu
from traffic.nic.endpoint_support import rss_bytes
BENCH_SPEC = dict(planes=2, groups=2, spines=2, hosts_per_group=2)
FAILOVER_GOAL_RTTS = 5.0
GOODPUT_GOAL_FRACTION = 0.90


class _EndpointPair:
    """Endpoint processes on h0 (group 0) and h2 (group 1) of a running Fabric, driven over
    their control sockets (traffic/nic/control.py), one QP h0 -> h2."""

    def __init__(self, fab, workdir, routing: str, transport: str = "mrc",
                 config: dict | None = None, env: dict | None = None):
        self.endpoints = {h: EndpointProcess(fab, h, workdir, config, routing=routing,
                                             call_timeout_s=300, env=env) for h in (0, 2)}
        self.procs = {h: ep.proc for h, ep in self.endpoints.items()}
        self.clients = {h: ep.client for h, ep in self.endpoints.items()}
        self.logs = {h: str(ep.log) for h, ep in self.endpoints.items()}
        self.size = 0
        # which transport core each endpoint runs (compiled or interpreted, and why)
        self.core = {f"h{h}": c.call("status").get("core") for h, c in self.clients.items()}
        qa = self.clients[0].call("create_qp", qpn=0x100, peer=2, peer_qpn=0x200,
                                  transport=transport)
        self.base_rtt_ns = qa["base_rtt_ns"]
        self.clients[2].call("create_qp", qpn=0x200, peer=0, peer_qpn=0x100,
                             base_rtt_ns=self.base_rtt_ns, transport=transport)

    def cpu_s(self) -> float:
        """CPU seconds (user + system) of both endpoint processes so far, to the nanosecond:
        /proc/<pid>/schedstat, where /proc/<pid>/stat counts 10 ms ticks."""
        total = 0
        for proc in self.procs.values():
            with open(f"/proc/{proc.pid}/schedstat") as f:
                total += int(f.read().split()[0])
        return total / 1e9

    def cpu_user_sys_s(self) -> tuple[float, float]:
        """(user, system) CPU seconds of both endpoint processes so far, from /proc."""
        import os
        user = system = 0.0
        for proc in self.procs.values():
            with open(f"/proc/{proc.pid}/stat") as f:
                parts = f.read().rsplit(")", 1)[1].split()
            user += int(parts[11]) / os.sysconf("SC_CLK_TCK")
            system += int(parts[12]) / os.sysconf("SC_CLK_TCK")
        return user, system

    def rss(self) -> dict:
        return {f"h{h}": rss_bytes(p.pid) for h, p in self.procs.items()}

    def write(self, size: int, rkey: int, seed: int = 1):
        self.clients[2].call("reg_mr", size=size, rkey=rkey, va=0)
        return self.clients[0].call("post_write", qpn=0x100, size=size, seed=seed, remote_va=0,
                                    rkey=rkey, imm=seed)

    def wait_recv(self, timeout_s: float = 120):
        return self.clients[2].call("wait", qpn=0x200, side="recv", count=1, timeout_s=timeout_s)

    def close(self) -> dict:
        """{host: its last status} of the endpoints that still answered; both are stopped."""
        stats = {h: ep.stop() for h, ep in self.endpoints.items()}
        return {h: s for h, s in stats.items() if s is not None}


def _add_transfer_arguments(parser, size_mib: int, link_mbit: int) -> None:
    parser.add_argument("--size-mib", type=positive_int, default=size_mib,
                        help=f"bytes written h0 -> h2, in MiB (default {size_mib})")
    parser.add_argument("--link-mbit", type=positive_int, default=link_mbit,
                        help=f"rate of every link in Mbit/s: host_link_mbit and fabric_link_mbit "
                             f"both (default {link_mbit})")


def add_goodput_arguments(parser) -> None:
    """The options of `mrclab bench goodput`."""
    _add_transfer_arguments(parser, size_mib=8, link_mbit=30)
    parser.add_argument("--mtu", type=positive_int, default=None,
                        help="IP MTU of every port, 1280..9000 (default 1500; 9000 with "
                             "--unshaped, the fast path's MTU)")
    parser.add_argument("--unshaped", action="store_true",
                        help="no rate limit on any link; MRC against one kernel TCP connection "
                             "between the same hosts (--link-mbit is then ignored)")


def add_unshaped_arguments(parser) -> None:
    """The options of `mrclab bench unshaped` (the same as goodput --unshaped, so that
    `mrclab bench all` runs it too)."""
    parser.add_argument("--size-mib", type=positive_int, default=8,
                        help="bytes written h0 -> h2, in MiB (default 8)")
    parser.add_argument("--mtu", type=positive_int, default=9000,
                        help="IP MTU of every port, 1280..9000 (default 9000)")


def unshaped_main(args) -> dict:
    return unshaped_goodput(size_mib=args.size_mib, mtu=args.mtu)


def goodput_main(args) -> dict:
    if args.unshaped:
        return unshaped_goodput(size_mib=args.size_mib, mtu=args.mtu or 9000)
    return goodput_bench(size_mib=args.size_mib, link_mbit=args.link_mbit,
                         mtu=args.mtu or 1500)


def goodput_bench(*, size_mib: int = 8, link_mbit: int = 30, mtu: int = 1500):
    """One MRC QP h0 (group 0) -> h2 (group 1) over the real fabric (srv6), no faults: goodput
    as % of the emulated line rate (sum of h0's plane port rates) and endpoint CPU per packet."""
    import tempfile
    spec = FabricSpec(**BENCH_SPEC, host_link_mbit=link_mbit, fabric_link_mbit=link_mbit,
                      mtu=mtu)
    size = size_mib << 20
    with tempfile.TemporaryDirectory(prefix="mrcbench-") as tmp, Fabric(spec, routing="srv6") as fab:
        pair = _EndpointPair(fab, tmp, "srv6")
        try:
            pair.write(1 << 20, rkey=0x10, seed=2)          # warm the switches' flow caches
            pair.wait_recv()
            cpu0, t0 = pair.cpu_s(), time.monotonic()
            pair.write(size, rkey=0x11, seed=3)
            pair.wait_recv()
            elapsed, cpu = time.monotonic() - t0, pair.cpu_s() - cpu0
            rss = pair.rss()
        finally:
            stats = pair.close()
    line_bps = link_mbit * 1e6 * spec.planes
    goodput_bps = size * 8 / elapsed
    # Headers cap goodput below the wire rate: at MTU 1500, 1344 B payload in a 1490 B SRv6
    # frame (Ethernet, two IPv6, UDP, BTH, METH, TSETH, RETH, ICRC) is 90.2% of the line rate.
    payload = payload_for_mtu(mtu)
    ceiling = payload / (payload + 146)
    packets = size / payload
    sent = stats.get(0, {}).get("counters", {})
    result = {"bytes": size, "seconds": elapsed, "goodput_mbit": goodput_bps / 1e6,
              "line_rate_mbit": line_bps / 1e6, "fraction_of_line_rate": goodput_bps / line_bps,
              "goal_fraction": GOODPUT_GOAL_FRACTION,
              "cpu_us_per_packet": cpu / packets * 1e6, "cpu_seconds_both_endpoints": cpu,
              "retransmitted": sent.get("retransmitted"), "rss_bytes": rss,
              "base_rtt_ms": pair.base_rtt_ns / 1e6,
              "header_ceiling_fraction": ceiling,
              "fraction_of_ceiling": goodput_bps / line_bps / ceiling, "mtu": mtu}
    print(f"goodput: {result['goodput_mbit']:.1f} Mbit/s of {result['line_rate_mbit']:.0f} Mbit/s "
          f"line rate = {100 * result['fraction_of_line_rate']:.0f}% (goal "
          f"{100 * GOODPUT_GOAL_FRACTION:.0f}%; headers cap it at {100 * ceiling:.1f}%, so "
          f"{100 * result['fraction_of_ceiling']:.0f}% of the payload ceiling), CPU {result['cpu_us_per_packet']:.0f} us/packet "
          f"(both endpoints), base RTT {result['base_rtt_ms']:.2f} ms, "
          f"retransmitted {result['retransmitted']}")
    return result


def _measured_base_rtt_ns(log_path: str) -> int | None:
    """The min probe RTT the sender measured at QP creation (its `base_rtt` event), before the
    full frame's serialization its timers add (and any min_base_rtt_ns floor)."""
    for e in read_jsonl(log_path, [], events=(Event.BASE_RTT,)):
        if e.get("rtt_ns"):
            return int(e["rtt_ns"])
    return None


def _rx_samples(log_path: str) -> list[tuple[int, int]]:
    return [(e["t_ns"], e["rx_bytes"])
            for e in read_jsonl(log_path, [], events=(Event.GOODPUT,))]


def add_failover_arguments(parser) -> None:
    """The options of `mrclab bench failover`."""
    _add_transfer_arguments(parser, size_mib=16, link_mbit=30)
    parser.add_argument("--keep-logs", default="", metavar="DIR",
                        help="keep the endpoints' event logs in DIR (default: a temporary "
                             "directory, removed)")


def failover_main(args) -> dict:
    return failover_bench(size_mib=args.size_mib, link_mbit=args.link_mbit,
                          keep_logs=args.keep_logs)


def failover_bench(*, size_mib: int = 16, link_mbit: int = 30, keep_logs: str = ""):
    """One sprayed MRC QP h0 -> h2; the T0-T1 link t0p0g0-t1p0s0 (on a quarter of its paths)
    goes down at a quarter of the transfer: time until the goodput (receiver, 50 ms windows)
    stays >= 90% of the pre-fault rate for 200 ms, in ms and base RTTs (goal <= 5). The
    surviving fabric still carries the NIC line rate here, so the pre-fault rate is the target."""
    import tempfile
    spec = FabricSpec(**BENCH_SPEC, host_link_mbit=link_mbit, fabric_link_mbit=link_mbit)
    size = size_mib << 20
    with tempfile.TemporaryDirectory(prefix="mrcbench-") as tmp, Fabric(spec, routing="srv6") as fab:
        if keep_logs:
            import os
            os.makedirs(keep_logs, exist_ok=True)
            tmp = keep_logs
        pair = _EndpointPair(fab, tmp, "srv6")
        try:
            pair.write(1 << 20, rkey=0x10, seed=2)
            pair.wait_recv()
            t_start = time.monotonic_ns()
            pair.write(size, rkey=0x11, seed=3)
            while pair.clients[2].call("status")["counters"]["rx_bytes"] < (1 << 20) + size // 4:
                time.sleep(0.01)
            fault = fab.controller.fault({"action": "link_down", "a": "t0p0g0", "b": "t1p0s0"})
            pair.wait_recv()
            t_end = time.monotonic_ns()
        finally:
            pair.close()
            samples = _rx_samples(pair.logs[2])
            measured = _measured_base_rtt_ns(pair.logs[0])   # before the temporary logs go
    t_fault = fault["t_ns"]
    kw = dict(window_ms=50.0, step_ms=10.0)
    before = recovery.steady_goodput_bps(samples, t_start, t_fault, **kw)
    rec = recovery.recovery_time_ms(samples, t_fault, before, until_ns=t_end, hold_ms=200.0, **kw)
    # Base RTT = the base RTT create_qp answered: the min probe RTT measured at QP creation
    # (raised to min_base_rtt_ns where a config sets that floor; the QP's timers add a full
    # frame's serialization on top); the raw min is printed too.
    rtt_ms = pair.base_rtt_ns / 1e6
    result = {"prefault_goodput_mbit": before * 8 / 1e6, "recovery_ms": rec,
              "recovery_base_rtts": None if rec is None else rec / rtt_ms, "base_rtt_ms": rtt_ms,
              "measured_min_rtt_ms": None if measured is None else measured / 1e6,
              "goal_base_rtts": FAILOVER_GOAL_RTTS}
    rec_text = "never" if rec is None else f"{rec:.0f} ms = {rec / rtt_ms:.1f} base RTTs"
    print(f"failover: pre-fault {result['prefault_goodput_mbit']:.1f} Mbit/s, back to >= 90% "
          f"after {rec_text} (goal <= {FAILOVER_GOAL_RTTS:.0f} base RTTs; base RTT "
          f"{rtt_ms:.2f} ms = QP timers' base, idle min probe RTT "
          f"{result['measured_min_rtt_ms']} ms; goodput in 50 ms windows, 10 ms steps)")
    return result


def add_memory_arguments(parser) -> None:
    """The options of `mrclab bench memory`."""
    _add_transfer_arguments(parser, size_mib=4, link_mbit=30)


def memory_main(args) -> dict:
    return memory_bench(size_mib=args.size_mib, link_mbit=args.link_mbit)


def memory_bench(*, size_mib: int = 4, link_mbit: int = 30):
    """Endpoint RSS per host (h0 sender, h2 receiver with a size_mib region) after a transfer."""
    r = goodput_bench(size_mib=size_mib, link_mbit=link_mbit)
    rss = {h: b / 2**20 for h, b in r["rss_bytes"].items()}
    print("memory: endpoint RSS " + ", ".join(f"{h} {m:.1f} MiB" for h, m in rss.items())
          + f" (h2 holds {size_mib + 1} MiB of registered memory)")
    return {"rss_mib": rss, "registered_mib": size_mib + 1}


# ---------------------------------------------------------------- fast data path benches

CPU_GOAL_RATIO = 10.0
CPU_FLOOR_RATIO = 5.0
PURE_PYTHON = {"MRCLAB_PURE_PYTHON": "1"}
REFERENCE_PAYLOAD = 1344      # what fits the largest data packet's headers in a 1500-byte MTU


class DataPath:
    """One way of running the endpoints in bench cpu: endpoint config and environment."""

    def __init__(self, config: dict, env: dict):
        self.config, self.env = config, env


# The reference per-packet path, without the fast path: interpreted transport core, one recv()
# system call per frame, 1344 B of payload per packet.
REFERENCE_PATH = DataPath({"fast_path": False, "max_payload": REFERENCE_PAYLOAD}, PURE_PYTHON)
# Compiled core (when `make setup` built it), PACKET_MMAP ring, payload from the fabric MTU.
FAST_PATH = DataPath({"fast_path": True}, {})


def _socket_drops(pair: "_EndpointPair") -> dict:
    """{host: frames its NIC sockets dropped (receive buffer or ring full)}, from the final
    `counters` event of each endpoint's log (after pair.close())."""
    out = {}
    for host, path in pair.logs.items():
        for e in read_jsonl(path, [], events=(Event.COUNTERS,)):
            out[f"h{host}"] = sum(e.get("socket_drops", {}).values())
    return out


def _timed_transfer(pair: "_EndpointPair", size: int) -> dict:
    """Seconds, CPU seconds (user, system) of both endpoints and the sender's frames and
    retransmissions of one WRITE of `size` bytes after a 1 MiB warm-up (switch flow caches,
    codec templates)."""
    pair.write(1 << 20, rkey=0x10, seed=2)
    pair.wait_recv()
    before = pair.clients[0].call("status")["counters"]
    # Timed from the return of post_write: generating the payload (randbytes) and its sha256
    # inside that call cost the same CPU for every path and are not the data path.
    pair.write(size, rkey=0x11, seed=3)
    (user0, sys0), cpu0, t0 = pair.cpu_user_sys_s(), pair.cpu_s(), time.monotonic()
    pair.wait_recv()
    elapsed, cpu1, (user1, sys1) = time.monotonic() - t0, pair.cpu_s(), pair.cpu_user_sys_s()
    after = pair.clients[0].call("status")["counters"]
    return {"seconds": elapsed, "cpu_s": cpu1 - cpu0,
            "cpu_user_s": user1 - user0, "cpu_sys_s": sys1 - sys0,
            "frames_sent": after["sent"] - before["sent"],
            "retransmitted": after["retransmitted"] - before["retransmitted"]}


# Each lever of the fast path alone on top of the reference path (--levers).
LEVER_PATHS = {"ring_only": DataPath({"fast_path": True, "max_payload": REFERENCE_PAYLOAD},
                                     PURE_PYTHON),
               "mtu_only": DataPath({"fast_path": False}, PURE_PYTHON),
               "compiled_only": DataPath({"fast_path": False, "max_payload": REFERENCE_PAYLOAD},
                                         {})}


def add_cpu_arguments(parser) -> None:
    """The options of `mrclab bench cpu`."""
    parser.add_argument("--size-mib", type=positive_int, default=16,
                        help="bytes written h0 -> h2 per path, in MiB (default 16)")
    parser.add_argument("--mtu", type=positive_int, default=9000,
                        help="IP MTU of the fabric, which sets the fast path's payload "
                             "(default 9000)")
    parser.add_argument("--link-mbit", type=positive_int, default=10000,
                        help="rate of every link (host_link_mbit and fabric_link_mbit both), "
                             "which the endpoints pace at, in Mbit/s; no link is shaped "
                             "(default 10000)")
    parser.add_argument("--levers", action="store_true",
                        help="also measure each lever alone on the reference path: the ring, "
                             "the MTU's payload, the compiled core")


def cpu_main(args) -> dict:
    return cpu_bench(size_mib=args.size_mib, mtu=args.mtu, link_mbit=args.link_mbit,
                     levers=args.levers)


def cpu_bench(*, size_mib: int = 16, mtu: int = 9000, link_mbit: int = 10000,
              levers: bool = False):
    """One MRC QP h0 (group 0) -> h2 (group 1) on one unshaped fabric of MTU `mtu`: CPU time
    (user + sys, both endpoint processes) per MiB delivered, for the reference path
    (interpreted core, one recv() per frame, 1344 B payload as at MTU 1500) and the fast path
    (compiled core, PACKET_MMAP ring, payload from the fabric MTU), one after the other in
    the same run. Goal ratio >= 10. levers=True adds each lever alone (LEVER_PATHS)."""
    import os
    import tempfile
    spec = FabricSpec(**BENCH_SPEC, host_link_mbit=link_mbit, fabric_link_mbit=link_mbit, mtu=mtu)
    size = size_mib << 20
    runs = {}
    with tempfile.TemporaryDirectory(prefix="mrcbench-") as tmp, \
            Fabric(spec, routing="srv6", shaped=False) as fab:
        paths = {"reference": REFERENCE_PATH, **(LEVER_PATHS if levers else {}),
                 "fast": FAST_PATH}
        for name, path in paths.items():
            workdir = os.path.join(tmp, name)
            os.makedirs(workdir)
            pair = _EndpointPair(fab, workdir, "srv6", config=path.config, env=path.env)
            try:
                run = _timed_transfer(pair, size)
            finally:
                pair.close()
            run["socket_drops"] = _socket_drops(pair)
            cpu = run["cpu_s"]
            runs[name] = {"cpu_ms_per_mib": cpu * 1e3 / size_mib,
                          "cpu_us_per_frame": cpu * 1e6 / max(1, run["frames_sent"]),
                          "goodput_mbit": size * 8 / run["seconds"] / 1e6,
                          "core": pair.core["h0"], **path.config, **run}
    ref, fast = runs["reference"]["cpu_ms_per_mib"], runs["fast"]["cpu_ms_per_mib"]
    result = {"reference_cpu_ms_per_mib": round(ref, 2), "fast_cpu_ms_per_mib": round(fast, 2),
              "ratio": round(ref / fast, 2), "goal_ratio": CPU_GOAL_RATIO,
              "floor_ratio": CPU_FLOOR_RATIO, "mtu": mtu, "size_mib": size_mib,
              "reference_core": runs["reference"]["core"], "fast_core": runs["fast"]["core"],
              "runs": runs}
    print(f"cpu: one MRC QP h0 -> h2, {size_mib} MiB, unshaped fabric, MTU {mtu}; "
          f"CPU of both endpoints per MiB delivered")
    print(f"  {'path':14} {'cpu ms/MiB':>11} {'user s':>7} {'sys s':>7} {'Mbit/s':>7} "
          f"{'frames':>7} {'retx':>6}  core")
    for name, r in runs.items():
        print(f"  {name:14} {r['cpu_ms_per_mib']:11.1f} {r['cpu_user_s']:7.2f} "
              f"{r['cpu_sys_s']:7.2f} {r['goodput_mbit']:7.0f} {r['frames_sent']:7} "
              f"{r['retransmitted']:6}  {r['core']}")
    print(f"  ratio {result['ratio']:.1f}x (goal >= {CPU_GOAL_RATIO:.0f}x, at least "
          f"{CPU_FLOOR_RATIO:.0f}x)")
    return result


TCP_BENCH_PORT = 5201


def tcp_sink_main(port: int) -> None:
    """Accept one TCP connection on [::]:port, read it to EOF, print {"bytes", "seconds"}
    (first accept to EOF) as JSON. Runs inside a fabric host (unshaped_goodput)."""
    import json
    import socket
    with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as srv:
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind(("::", port))
        srv.listen(1)
        print("listening", flush=True)
        conn, _ = srv.accept()
        t0 = time.monotonic()
        buf = bytearray(1 << 20)
        total = 0
        with conn:
            while True:
                n = conn.recv_into(buf)
                if not n:
                    break
                total += n
        print(json.dumps({"bytes": total, "seconds": time.monotonic() - t0}), flush=True)


def tcp_source_main(addr: str, port: int, size: int) -> None:
    """Connect to [addr]:port and send `size` zero bytes, then close."""
    import socket
    data = memoryview(bytes(size))
    with socket.create_connection((addr, port), timeout=60) as conn:
        conn.sendall(data)


def _tcp_goodput_mbit(fab, src: int, dst: int, size: int) -> float:
    """Goodput of one kernel TCP connection src -> dst over plane 0 of a running fabric."""
    import json
    import os
    import subprocess
    import sys
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sink = fab.popen_in_host(dst, [sys.executable, "-c",
                                   f"from emulation.benches.fabric import tcp_sink_main; "
                                   f"tcp_sink_main({TCP_BENCH_PORT})"],
                             cwd=repo, stdout=subprocess.PIPE, text=True)
    try:
        if sink.stdout.readline().strip() != "listening":
            raise RuntimeError("TCP sink did not start")
        addr = fab.topo.nic_addr(dst, 0)
        source = fab.popen_in_host(src, [sys.executable, "-c",
                                         f"from emulation.benches.fabric import tcp_source_main; "
                                         f"tcp_source_main({addr!r}, {TCP_BENCH_PORT}, {size})"],
                                   cwd=repo)
        if source.wait(timeout=300) != 0:
            raise RuntimeError(f"TCP source exited with {source.returncode}")
        result = json.loads(sink.stdout.readline())
        sink.wait(timeout=30)
    finally:
        if sink.poll() is None:
            sink.kill()
            sink.wait()
    if result["bytes"] != size:
        raise RuntimeError(f"TCP sink got {result['bytes']} of {size} bytes")
    return size * 8 / result["seconds"] / 1e6


def _loss_causes(stats: dict) -> dict:
    """Why the sender retransmitted (its QP's loss counters, warm-up included) and how many
    data packets the receiver got twice: duplicates mean a retransmission was not needed (the
    original was late, not lost)."""
    def qp_counters(host: int, side: str) -> dict:
        qps = stats.get(host, {}).get("qps", {})
        return next(iter(qps.values()), {}).get(side, {}) if qps else {}
    sender, receiver = qp_counters(0, "sender"), qp_counters(2, "receiver")
    out = {k: sender.get(k) for k in ("timeouts", "timeouts_without_evidence",
                                      "sack_gap_losses", "nacks", "retransmitted_packets")}
    out["receiver_duplicates"] = receiver.get("duplicates")
    return out


def unshaped_goodput(*, size_mib: int = 8, mtu: int = 9000) -> dict:
    """No rate limit on any link: one MRC QP h0 -> h2 (both planes, fast path) and then one
    kernel TCP connection h0 -> h2 (plane 0) over the same fabric; goal ratio MRC/TCP >= 1.
    The endpoints pace at the spec's 10 Gbit/s, i.e. not at all on this machine."""
    import tempfile
    spec = FabricSpec(**BENCH_SPEC, host_link_mbit=10000, fabric_link_mbit=10000, mtu=mtu)
    size = size_mib << 20
    with tempfile.TemporaryDirectory(prefix="mrcbench-") as tmp, \
            Fabric(spec, routing="srv6", shaped=False) as fab:
        pair = _EndpointPair(fab, tmp, "srv6")
        try:
            run = _timed_transfer(pair, size)
        finally:
            stats = pair.close()
        run["socket_drops"] = _socket_drops(pair)
        tcp_mbit = _tcp_goodput_mbit(fab, 0, 2, size)
    mrc_mbit = size * 8 / run["seconds"] / 1e6
    result = {"mrc_mbit": round(mrc_mbit, 1), "tcp_mbit": round(tcp_mbit, 1),
              "ratio": round(mrc_mbit / tcp_mbit, 2), "goal_ratio": 1.0, "mtu": mtu,
              "size_mib": size_mib, "mrc_retransmitted": run["retransmitted"],
              "mrc_socket_drops": run["socket_drops"], "mrc_core": pair.core["h0"],
              "mrc_losses": _loss_causes(stats),
              "mrc_cpu_ms_per_mib": round(run["cpu_s"] * 1e3 / size_mib, 2)}
    print(f"goodput, unshaped fabric (MTU {mtu}, {size_mib} MiB, h0 -> h2): MRC "
          f"{mrc_mbit:.0f} Mbit/s (one QP, both planes), kernel TCP {tcp_mbit:.0f} Mbit/s (one "
          f"connection), ratio {result['ratio']:.2f} (goal >= 1.0); MRC retransmitted "
          f"{run['retransmitted']}, CPU {result['mrc_cpu_ms_per_mib']:.1f} ms/MiB, core "
          f"{result['mrc_core']}")
    losses = result["mrc_losses"]
    print(f"  losses (whole run): SACK gap {losses['sack_gap_losses']}, timeouts "
          f"{losses['timeouts']}, NACKs {losses['nacks']}; packets the receiver got twice "
          f"{losses['receiver_duplicates']}; socket drops {run['socket_drops']}")
    return result
