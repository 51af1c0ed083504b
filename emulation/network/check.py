"""`mrclab fabric --check`: prove a freshly built fabric forwards as the topology says.

1. Reachability: every ordered host pair on every plane, probes with every EV that picks a
   distinct path (SRv6: one per spine; ECMP: a few entropies), batched as one sender and one
   receiver per host (emulation.network.pathcheck), so a 2x2x2x2 fabric checks in seconds.
2. Path pinning: for sample EVs, the per-port OpenFlow counters (controller /counters/ports)
   move on exactly the ports of topology.path_links and on no other port of that plane.
3. ECMP mode: kernel ping6 between every host pair on every plane.
Prints one summary line; raises CheckFailed with the reason otherwise.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time

from controller.routing import ecmp_uplink
from emulation.network.fabric import Fabric
from model.topology import Topology, ev_plane, ev_spine, make_ev

PROBES_PER_FLOW = 5
PIN_PACKETS = 40
PIN_NOISE = 2          # packets a port off the path may show (none expected; tolerate strays)


class CheckFailed(AssertionError):
    pass


def _predicted_spine(topo: Topology, routing: str, src: int, dst: int, plane: int,
                     ev: int) -> int | None:
    hs, hd = topo.host(src), topo.host(dst)
    if hs.group == hd.group:
        return None
    if routing == "srv6":
        return ev_spine(ev)
    return ecmp_uplink(topo.spec, ev, hs.group, hd.group, plane=plane)


def flows_for(topo: Topology, routing: str, src: int) -> list[tuple[int, int]]:
    """(dst, ev) probes host src sends: every peer, every plane, every distinct path."""
    out = []
    spines = topo.spec.spines
    for dst in (h.index for h in topo.hosts if h.index != src):
        same_group = topo.host(src).group == topo.host(dst).group
        for plane in range(topo.spec.planes):
            if routing == "srv6":
                for spine in ([0] if same_group else range(spines)):
                    out.append((dst, make_ev(plane, spine, 1 + (src * 131 + dst * 17 + spine)
                                             % 0xFFF0)))
            else:
                # Consecutive entropies hit consecutive ECMP buckets: covers every uplink.
                base = 1 + (src * 131 + dst * 17) % 0xFF00
                for k in range(1 if same_group else spines):
                    out.append((dst, make_ev(plane, 0, base + k)))
    return out


def _pathcheck(fab, n: int, args: list[str], **kw) -> subprocess.Popen:
    return fab.popen_in_host(n, [sys.executable, "-m", "emulation.network.pathcheck"] + args,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def check_reachability(fab, count: int = PROBES_PER_FLOW) -> dict:
    topo, spec_json = fab.topo, json.dumps(fab.topo.spec.to_dict())
    flows = {h.index: flows_for(topo, fab.routing, h.index) for h in topo.hosts}
    expect = {h.index: 0 for h in topo.hosts}
    for src, fl in flows.items():
        for dst, _ev in fl:
            expect[dst] += count
    receivers = {n: _pathcheck(fab, n, ["recv", "--spec", spec_json, "--host", str(n),
                                        "--expect", str(expect[n]), "--timeout-s", "20"])
                 for n in expect}
    for n, proc in receivers.items():
        line = proc.stderr.readline()
        if "ready" not in line:
            proc.kill()
            raise CheckFailed(f"pathcheck receiver on h{n} did not start: {line.strip()} "
                              f"{proc.stderr.read()[-500:]}")
    senders = {n: _pathcheck(fab, n, ["send", "--spec", spec_json, "--routing", fab.routing,
                                      "--src", str(n), "--flows", json.dumps(fl),
                                      "--count", str(count)])
               for n, fl in flows.items()}
    for n, proc in senders.items():
        out, err = proc.communicate(timeout=60)
        if proc.returncode != 0:
            raise CheckFailed(f"pathcheck sender on h{n} failed: {err.strip()[-800:]}")
    got: dict[tuple[int, int, int], int] = {}
    for n, proc in receivers.items():
        out, err = proc.communicate(timeout=30)
        if proc.returncode != 0:
            raise CheckFailed(f"pathcheck receiver on h{n} failed: {err.strip()[-800:]}")
        for rec in json.loads(out)["flows"]:
            got[(rec["src"], rec["dst"], rec["ev"])] = rec["packets"]
    missing = []
    for src, fl in flows.items():
        for dst, ev in fl:
            if got.get((src, dst, ev), 0) != count:
                missing.append(f"h{src}->h{dst} plane {ev_plane(ev)} ev {ev:#x}: "
                               f"{got.get((src, dst, ev), 0)}/{count}")
    if missing:
        raise CheckFailed(f"{len(missing)} probe flow(s) not delivered exactly: "
                          + "; ".join(missing[:8]) + (" ..." if len(missing) > 8 else ""))
    pairs = len(topo.hosts) * (len(topo.hosts) - 1) * topo.spec.planes
    return {"pair_planes": pairs, "flows": sum(len(f) for f in flows.values()),
            "probes": sum(len(f) for f in flows.values()) * count}


def _port_counters(fab) -> dict[tuple[str, int], dict]:
    raw = fab.controller.port_counters()
    return {(sw, int(port)): c for sw, ports in raw.items() for port, c in ports.items()}


def expected_port_moves(topo: Topology, src: int, dst: int, plane: int,
                        spine: int) -> set[tuple[str, int, str]]:
    """(switch, port, 'rx'|'tx') counters a packet from src to dst on (plane, spine) moves."""
    moves = set()
    nodes = topo.path(src, dst, plane, spine)
    for (u, v), link in zip(zip(nodes, nodes[1:]), topo.path_links(src, dst, plane, spine)):
        u_port = link.a_port if link.a == u else link.b_port
        v_port = link.b_port if link.b == v else link.a_port
        if u in topo.switches:
            moves.add((u, u_port, "tx"))
        if v in topo.switches:
            moves.add((v, v_port, "rx"))
    return moves


def pin_samples(topo: Topology, routing: str) -> list[tuple[int, int, int]]:
    """(src, dst, ev) samples: one cross-group pair, every plane, every spine."""
    hosts = topo.hosts
    src = hosts[0].index
    other = [h for h in hosts if h.group != hosts[0].group]
    dst = other[0].index if other else hosts[1].index
    samples = []
    for plane in range(topo.spec.planes):
        for spine in range(topo.spec.spines if other else 1):
            if routing == "srv6":
                ev = make_ev(plane, spine, 0x100 + spine)
            else:
                ev = make_ev(plane, 0, 0x100 + spine)  # consecutive buckets
            samples.append((src, dst, ev))
    return samples


def check_path_pinning(fab, packets: int = PIN_PACKETS) -> int:
    topo, spec_json = fab.topo, json.dumps(fab.topo.spec.to_dict())
    for src, dst, ev in pin_samples(topo, fab.routing):
        plane = ev_plane(ev)
        spine = _predicted_spine(topo, fab.routing, src, dst, plane, ev) or 0
        want = expected_port_moves(topo, src, dst, plane, spine)
        receiver = _pathcheck(fab, dst, ["recv", "--spec", spec_json, "--host", str(dst),
                                         "--planes", str(plane), "--expect", str(packets),
                                         "--timeout-s", "10"])
        line = receiver.stderr.readline()
        if "ready" not in line:
            receiver.kill()
            raise CheckFailed(f"pathcheck receiver on h{dst} did not start: {line.strip()}")
        before = _port_counters(fab)
        proc = _pathcheck(fab, src, ["send", "--spec", spec_json, "--routing", fab.routing,
                                     "--src", str(src), "--flows", json.dumps([[dst, ev]]),
                                     "--count", str(packets)])
        out, err = proc.communicate(timeout=60)
        if proc.returncode != 0:
            raise CheckFailed(f"pathcheck sender on h{src} failed: {err.strip()[-800:]}")
        out, err = receiver.communicate(timeout=30)
        received = json.loads(out)["total"] if receiver.returncode == 0 else err
        deadline = time.monotonic() + 5
        while True:
            after = _port_counters(fab)
            delta = {(sw, port, d): after[(sw, port)][f"{d}_packets"]
                     - before.get((sw, port), {}).get(f"{d}_packets", 0)
                     for (sw, port) in after for d in ("rx", "tx")}
            short = [k for k in want if delta.get(k, 0) < packets]
            if not short or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        where = f"h{src}->h{dst} plane {plane} ev {ev:#x} (spine {spine})"
        if received != packets:
            raise CheckFailed(f"{where}: receiver counted {received} of {packets} probes")
        if short:
            raise CheckFailed(f"{where}: counters on the computed path did not move by "
                              f"{packets}: " + ", ".join(f"{sw} port {p} {d}={delta.get((sw, p, d), 0)}"
                                                          for sw, p, d in sorted(short)))
        plane_switches = {s.name for s in topo.switches.values() if s.plane == plane}
        stray = [f"{sw} port {p} {d}={v}" for (sw, p, d), v in sorted(delta.items())
                 if sw in plane_switches and (sw, p, d) not in want and v > PIN_NOISE]
        if stray:
            raise CheckFailed(f"{where}: packets also left the computed path: "
                              + ", ".join(stray))
    return len(pin_samples(topo, fab.routing))


def check_ping(fab) -> int:
    topo, n = fab.topo, 0
    for a in topo.hosts:
        for b in topo.hosts:
            if a.index == b.index:
                continue
            for plane in range(topo.spec.planes):
                try:
                    fab.cmd_in_host(a.index, ["ping", "-6", "-n", "-q", "-c", "1", "-W", "2",
                                              "-I", f"{a.name}-p{plane}",
                                              topo.nic_addr(b.index, plane)], timeout=10)
                except Exception as e:
                    raise CheckFailed(f"ping6 {a.name} -> {b.name} on plane {plane} failed: {e}")
                n += 1
    return n


def check_fabric(fab) -> str:
    """Run every check on a running Fabric; returns the summary line, raises CheckFailed."""
    t0 = time.monotonic()
    reach = check_reachability(fab)
    pinned = check_path_pinning(fab)
    pings = check_ping(fab) if fab.routing == "ecmp" else 0
    s = fab.topo.spec
    return (f"fabric check ok: {fab.routing} {s.planes}x{s.groups}x{s.spines}x{s.hosts_per_group} "
            f"(planes x groups x spines x hosts/group), {reach['pair_planes']} host-pair-planes, "
            f"{reach['flows']} flows / {reach['probes']} probes delivered, {pinned} EV paths "
            f"pinned by port counters" + (f", {pings} ping6 ok" if pings else "")
            + f", {time.monotonic() - t0:.1f} s")


def run_check(spec, routing: str, dynamic_convergence_s=None, run_dir=None,
              placement=None) -> int:
    try:
        with Fabric(spec, routing=routing, dynamic_convergence_s=dynamic_convergence_s,
                    run_dir=run_dir, placement=placement) as fab:
            print(check_fabric(fab), flush=True)
        return 0
    except CheckFailed as e:
        print(f"fabric check FAILED: {e}", flush=True)
        return 1
