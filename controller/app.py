"""The controller process: os-ken OpenFlow app + fault executor + HTTP API.

  python -m controller.app --spec-json FILE --routing srv6|ecmp [--dynamic-convergence-s X]
                           --of-port 6653 --api-port 8787 --fault-log FILE [--buckets N]

FabricController holds the state and runs faults (subprocesses, checked); it talks to switches
only through a small OpenFlow interface (install / delete_cookie / stats) that MrcLabApp, the
only os-ken adapter, implements. Routing rules come from controller.routing (pure), fault
commands from controller.faults (pure).
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time

from controller import faults as F
from controller import routing as R
from controller.api import ApiServer, CommandError
from controller.denylist import DenylistService
from emulation.topology import FabricSpec, Topology, host_intf

LOG = logging.getLogger("mrclab.controller")
COMMAND_TIMEOUT_S = 10.0
OPENFLOW_TIMEOUT_S = 5.0
CLEANUP_TIMEOUT_S = 5.0


def run_checked(argv: list[str]) -> str:
    """Run one command; raise CommandError with argv and stderr if it fails."""
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise CommandError(f"command {' '.join(argv)!r} could not run: {err}") from None
    if proc.returncode != 0:
        raise CommandError(f"command {' '.join(argv)!r} failed (exit {proc.returncode}): "
                           f"{proc.stderr.strip() or proc.stdout.strip()}")
    return proc.stdout


def _pair(a: str, b: str) -> frozenset:
    return frozenset((a, b))


class FabricController:
    """Controller state and fault execution, independent of os-ken (see MrcLabApp)."""

    def __init__(self, topo: Topology, routing_mode: str, dynamic_convergence_s: float | None,
                 fault_log_path: str | None, buckets: int | None = None, run=run_checked):
        if routing_mode not in R.ROUTING_MODES:
            raise ValueError(f"routing must be one of {R.ROUTING_MODES}, got {routing_mode!r}")
        if dynamic_convergence_s is not None and routing_mode != "ecmp":
            raise ValueError("--dynamic-convergence-s only applies to --routing ecmp")
        if dynamic_convergence_s is not None and dynamic_convergence_s < 0:
            raise ValueError("--dynamic-convergence-s must be >= 0")
        self.topo = topo
        self.mode = routing_mode
        self.convergence_s = dynamic_convergence_s
        self.buckets = R.check_buckets(buckets if buckets is not None
                                       else R.default_buckets(topo.spec.spines))
        self.run = run
        self.openflow = None            # set by the adapter
        self.lock = threading.RLock()
        self.log_lock = threading.Lock()
        self.fault_log_path = fault_log_path
        self.fault_log: list[dict] = []
        self.host_pids: dict[str, int] = {}
        self.admin_down: set[frozenset] = set()
        self.port_down: set[tuple[str, int]] = set()
        self.routed_around: frozenset = frozenset()
        self.installed: dict[str, list[R.FlowRule]] = {}
        self.blackholes: set[str] = set()
        self.flaps: dict[frozenset, threading.Event] = {}
        # active directional faults: (kind, sender, receiver) -> params
        self.active: dict[tuple[str, str, str], dict] = {}
        self.degraded: dict[tuple[str, str], tuple[list, list[str], bool]] = {}
        self.ports_of_switch = {name: topo.switch_ports(name) for name in topo.switches}
        self.dpid_to_switch = {sw.dpid: name for name, sw in topo.switches.items()}
        self.denylist = DenylistService(topo)

    # ------------------------------------------------------------ logging

    def log(self, entry: dict) -> dict:
        entry = {"t_ns": time.monotonic_ns(), **entry}
        with self.log_lock:
            self.fault_log.append(entry)
            if self.fault_log_path:
                with open(self.fault_log_path, "a") as f:
                    f.write(json.dumps(entry, sort_keys=True) + "\n")
                    f.flush()
        return entry

    # ------------------------------------------------------------ routing

    def rules_for(self, switch: str) -> list[R.FlowRule]:
        """Rules for a (re)connecting switch: routing for the current routed-around set plus
        any active blackhole."""
        with self.lock:
            rules = R.switch_rules(self.topo, switch, self.mode, self.routed_around, self.buckets)
            self.installed[switch] = rules
            extra = [F.blackhole_rule(self.topo, switch)] if switch in self.blackholes else []
        return rules + extra

    def observed_down_links(self) -> frozenset:
        with self.lock:
            down = set(self.admin_down)
            for switch, port in self.port_down:
                link = self.ports_of_switch[switch].get(port)
                if link is not None:
                    down.add(_pair(link.a, link.b))
            return frozenset(down)

    def on_port_status(self, switch: str, port: int, up: bool, reason: str) -> None:
        link = self.ports_of_switch.get(switch, {}).get(port)
        with self.lock:
            was_down = (switch, port) in self.port_down
            if was_down != up:
                return   # no transition (e.g. a MODIFY for another attribute): nothing to log
            if up:
                self.port_down.discard((switch, port))
            else:
                self.port_down.add((switch, port))
            snapshot = self.observed_down_links()
        entry = {"action": "port_status", "switch": switch, "port": port,
                 "state": "up" if up else "down", "reason": reason}
        if link is not None:
            entry.update(a=link.a, b=link.b)
        self.log(entry)
        if self.convergence_s is not None:
            timer = threading.Timer(self.convergence_s, self._reconverge, args=(snapshot,))
            timer.daemon = True
            timer.start()

    def _reconverge(self, down: frozenset) -> None:
        """Recompute ECMP buckets around `down` and resend only the rules that changed."""
        try:
            with self.lock:
                if down == self.routed_around:
                    return
                self.routed_around = down
                updates = {}
                for name, sw in self.topo.switches.items():
                    if sw.tier != 0:
                        continue
                    new = R.switch_rules(self.topo, name, self.mode, down, self.buckets)
                    changed = R.changed_rules(self.installed.get(name, []), new)
                    self.installed[name] = new
                    if changed:
                        updates[name] = changed
            for name, changed in updates.items():
                if self.openflow is not None and self.openflow.is_connected(name):
                    self.openflow.install(name, changed)
            self.log({"action": "reconverge",
                      "down_links": sorted(sorted(p) for p in down),
                      "switches_updated": sorted(updates)})
        except Exception:
            LOG.exception("reconvergence failed")

    # ------------------------------------------------------------ API backend

    def health(self) -> dict:
        of = self.openflow
        return {"ok": True, "routing": self.mode,
                "switches_connected": of.connected_count() if of else 0,
                "switches_expected": len(self.topo.switches),
                "ready": bool(of and of.ready_count() == len(self.topo.switches)),
                "dynamic_convergence_s": self.convergence_s, "ecmp_buckets": self.buckets}

    def register_hosts(self, pids) -> dict:
        """Accept only the fabric's own host namespaces: the controller (root) later runs tc and
        nft inside them, so a pid is taken only if its network namespace holds every NIC port
        of the host it is registered as (h<n>-p<plane>, which the fabric creates) and is not
        the controller's own namespace."""
        if not isinstance(pids, dict) or not pids:
            raise ValueError('POST /hosts needs a JSON object {"h0": pid, ...}')
        clean = {}
        for name, pid in pids.items():
            try:
                host = self.topo.host(name)
            except KeyError as err:
                raise ValueError(err.args[0]) from None
            if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
                raise ValueError(f"pid of {name} must be a positive integer, got {pid!r}")
            self._check_host_namespace(name, host.index, pid)
            clean[name] = pid
        with self.lock:
            self.host_pids.update(clean)
        return {"ok": True, "hosts": sorted(self.host_pids)}

    def _check_host_namespace(self, name: str, index: int, pid: int) -> None:
        try:
            theirs = os.stat(f"/proc/{pid}/ns/net")
            with open(f"/proc/{pid}/net/dev") as f:
                interfaces = {line.split(":", 1)[0].strip() for line in f.readlines()[2:]}
        except FileNotFoundError:
            raise ValueError(f"pid {pid} of {name} is not a running process") from None
        except OSError as err:
            raise ValueError(f"pid {pid} of {name}: cannot inspect its network namespace "
                             f"({err.strerror})") from None
        own = os.stat("/proc/self/ns/net")
        if (theirs.st_dev, theirs.st_ino) == (own.st_dev, own.st_ino):
            raise ValueError(f"pid {pid} of {name} shares the controller's network namespace; "
                             f"register the process that holds {name}'s namespace (its Mininet "
                             f"host shell)")
        ports = [host_intf(index, plane) for plane in range(self.topo.spec.planes)]
        missing = [p for p in ports if p not in interfaces]
        if missing:
            raise ValueError(f"pid {pid} is not in {name}'s network namespace: it has no "
                             f"interface {', '.join(missing)} (it has "
                             f"{', '.join(sorted(interfaces)[:8]) or 'none'})")

    def links(self) -> list:
        down = self.observed_down_links()
        out = []
        with self.lock:
            for link in self.topo.links:
                pair = _pair(link.a, link.b)
                fl = [{"action": kind, "from": s, "to": r, **params}
                      for (kind, s, r), params in self.active.items() if _pair(s, r) == pair]
                if pair in self.flaps:
                    fl.append({"action": "flap"})
                for node in (link.a, link.b):
                    if node in self.blackholes:
                        fl.append({"action": "blackhole", "node": node})
                out.append({"a": link.a, "b": link.b, "a_intf": link.a_intf,
                            "b_intf": link.b_intf, "plane": link.plane, "kind": link.kind,
                            "state": "down" if pair in down else "up", "faults": fl})
        return out

    def faults(self) -> list:
        with self.log_lock:
            return list(self.fault_log)

    def port_counters(self) -> dict:
        return self._require_openflow().port_stats()

    def flow_counters(self) -> dict:
        return self._require_openflow().flow_stats()

    def trim_counters(self) -> dict:
        """Per switch egress port counters of the trimming program (emulation/trimming.py reads
        its BPF maps; this process runs in the root namespace, where the switch ports are)."""
        from emulation import trimming
        try:
            return trimming.fabric_counters(self.topo)
        except trimming.TrimmingError as err:
            raise CommandError(str(err)) from None

    def bpf_marker_state(self, intf: str) -> str:
        """'active' if the trimming program (with its queue-based ECN) is on intf, else 'missing'."""
        from emulation import trimming
        try:
            trimming.prog_id(intf)
            return "active"
        except trimming.TrimmingError:
            return "missing"

    def _require_openflow(self):
        if self.openflow is None:
            raise TimeoutError("OpenFlow side not running")
        return self.openflow

    # ------------------------------------------------------------ faults

    def fault(self, cmd) -> dict:
        fault = F.validate(cmd, self.topo)
        with self.lock:
            handler = getattr(self, "_do_" + fault["action"])
            extra = handler(fault) or {}
            entry = self.log({**fault, **extra})
        return {"ok": True, "t_ns": entry["t_ns"], "fault": fault}

    # ------------------------------------------------------------ denylist (endpoints act on it)

    def register_endpoints(self, sockets) -> dict:
        return self.denylist.register(sockets)

    def deny(self, command) -> dict:
        return self._denylist_change(self.denylist.deny, command)

    def allow(self, command) -> dict:
        return self._denylist_change(self.denylist.allow, command)

    def denylist_state(self) -> dict:
        return self.denylist.state()

    def _denylist_change(self, change, command) -> dict:
        """Apply, then record in the fault log: a deny is a control-plane action on the run's
        time line, like a fault."""
        result = change(command)
        rule = result["rule"]
        entry = {"action": result["action"], "rule": rule, "what": result["what"],
                 "reason": result["reason"], "t_ns": result["t_ns"]}
        if "link" in rule:
            entry["a"], entry["b"] = rule["link"].split("~")
        self.log(entry)
        return result

    def _cancel_flap(self, pair: frozenset) -> None:
        stop = self.flaps.pop(pair, None)
        if stop is not None:
            stop.set()

    def _set_link(self, a: str, b: str, up: bool) -> None:
        for argv in F.link_set_commands(self.topo, a, b, up, self.host_pids):
            self.run(argv)
        if up:
            self.admin_down.discard(_pair(a, b))
        else:
            self.admin_down.add(_pair(a, b))

    def _do_link_down(self, f):
        self._cancel_flap(_pair(f["a"], f["b"]))
        self._set_link(f["a"], f["b"], False)

    def _do_link_up(self, f):
        self._cancel_flap(_pair(f["a"], f["b"]))
        self._set_link(f["a"], f["b"], True)

    def _do_flap(self, f):
        pair = _pair(f["a"], f["b"])
        self._cancel_flap(pair)
        # check the commands can be built (namespaces known) before starting the thread
        F.link_set_commands(self.topo, f["a"], f["b"], False, self.host_pids)
        stop = threading.Event()
        self.flaps[pair] = stop
        thread = threading.Thread(target=self._flap_loop, args=(f, stop), daemon=True,
                                  name=f"flap-{f['a']}-{f['b']}")
        thread.start()

    def _flap_loop(self, f: dict, stop: threading.Event) -> None:
        start = time.monotonic()
        try:
            for offset, up in F.flap_schedule(f["period_s"], f["count"]):
                if stop.wait(max(0.0, start + offset - time.monotonic())):
                    return
                with self.lock:
                    if stop.is_set():
                        return
                    self._set_link(f["a"], f["b"], up)
                self.log({"action": "flap_step", "a": f["a"], "b": f["b"],
                          "state": "up" if up else "down"})
        except Exception as err:
            LOG.exception("flap failed")
            self.log({"action": "flap_error", "a": f["a"], "b": f["b"], "error": str(err)})
        finally:
            with self.lock:
                if self.flaps.get(_pair(f["a"], f["b"])) is stop:
                    del self.flaps[_pair(f["a"], f["b"])]

    def _directional(self, f, kind: str, apply_one) -> None:
        ports = F.egress_ports(self.topo, f, self.host_pids)   # raises before any change
        for (sender, receiver), (ns, intf) in zip(F.directed_pairs(f), ports):
            apply_one(ns, intf, sender, receiver)

    def _clear_directional(self, f, kind: str, clear_one) -> None:
        pairs = F.directed_pairs(f)
        active = [(s, r) for s, r in pairs if (kind, s, r) in self.active]
        if not active:
            raise F.FaultError(f"{f['action']}: no {kind} active on {f['a']}<->{f['b']} "
                               f"({f['direction']})")
        for sender, receiver in active:
            ns = F.netns_prefix(self.topo, sender, self.host_pids)
            clear_one(ns, F.intf_of(self.topo, sender, receiver), sender, receiver)
            del self.active[(kind, sender, receiver)]

    def _do_gray_loss(self, f):
        def one(ns, intf, s, r):
            for argv in F.gray_loss_commands(ns, intf, f["percent"]):
                self.run(argv)
            self.active[("gray_loss", s, r)] = {"percent": f["percent"]}
        self._directional(f, "gray_loss", one)

    def _do_gray_loss_clear(self, f):
        def one(ns, intf, s, r):
            for argv in F.nft_clear_commands(ns, "loss", intf):
                self.run(argv)
        self._clear_directional(f, "gray_loss", one)

    def _do_ecn_mark(self, f):
        notes = []

        def one(ns, intf, s, r):
            # The queue-based marker is the BPF program (emulation/trimming.py); this nftables
            # rate marker is only the fallback where BPF is unavailable: say which case this is.
            bpf = self.bpf_marker_state(intf) if not ns else "missing"
            if bpf == "active":
                note = (f"ecn_mark on {intf}: the in-fabric BPF virtual-queue marker is active "
                        f"there; adding the nftables rate marker (fallback) on top of it")
            else:
                note = (f"ecn_mark on {intf}: no in-fabric BPF marker on this port; using the "
                        f"nftables rate marker as the fallback")
            LOG.warning("%s", note)
            notes.append(note)
            for argv in F.ecn_mark_commands(ns, intf, f["rate_mbit"]):
                self.run(argv)
            self.active[("ecn_mark", s, r)] = {"rate_mbit": f["rate_mbit"]}
        self._directional(f, "ecn_mark", one)
        return {"marker": "nftables-fallback", "notes": notes}

    def _do_ecn_clear(self, f):
        def one(ns, intf, s, r):
            for argv in F.nft_clear_commands(ns, "ecn", intf):
                self.run(argv)
        self._clear_directional(f, "ecn_mark", one)

    def _do_degrade(self, f):
        link = self.topo.link(f["a"], f["b"])

        def one(ns, intf, s, r):
            key = (s, r)
            if key in self.degraded:
                _, leaves, own = self.degraded[key]
            else:
                leaves = F.htb_leaf_classes(self.run(F.tc_class_show_command(ns, intf)))
                own = not leaves
            cmds = F.degrade_commands(ns, intf, leaves, link.mbit * f["fraction"])
            if own and key in self.degraded:   # our qdisc exists already: change its class
                cmds = [c for c in cmds if "qdisc" not in c]
                cmds = [[x if x != "add" else "change" for x in c] for c in cmds]
            for argv in cmds:
                self.run(argv)
            self.degraded[key] = (ns, leaves, own)
            self.active[("degrade", s, r)] = {"fraction": f["fraction"],
                                              "mbit": link.mbit * f["fraction"]}
        self._directional(f, "degrade", one)

    def _do_degrade_clear(self, f):
        link = self.topo.link(f["a"], f["b"])

        def one(ns, intf, s, r):
            _, leaves, own = self.degraded.pop((s, r))
            for argv in F.degrade_clear_commands(ns, intf, leaves, link.mbit, own):
                self.run(argv)
        self._clear_directional(f, "degrade", one)

    def _do_blackhole(self, f):
        switch = f["a"]
        if switch in self.blackholes:
            raise F.FaultError(f"blackhole: {switch} is already a blackhole")
        of = self._require_openflow()
        if not of.is_connected(switch):
            raise F.FaultError(f"blackhole: switch {switch} is not connected")
        of.install(switch, [F.blackhole_rule(self.topo, switch)])
        self.blackholes.add(switch)

    def _do_blackhole_clear(self, f):
        switch = f["a"]
        if switch not in self.blackholes:
            raise F.FaultError(f"blackhole_clear: {switch} is not a blackhole")
        rule = F.blackhole_rule(self.topo, switch)
        self._require_openflow().delete_cookie(switch, rule.cookie)
        self.blackholes.discard(switch)

    def clear_all(self) -> None:
        """Best effort at exit: stop flaps, remove nft tables and degrades we made."""
        with self.lock:
            for pair in list(self.flaps):
                self._cancel_flap(pair)
            for (kind, s, r) in list(self.active):
                try:
                    f = {"action": kind + "_clear", "a": s, "b": r, "direction": "a->b"}
                    if kind == "ecn_mark":
                        f["action"] = "ecn_clear"
                    getattr(self, "_do_" + f["action"])(f)
                except Exception as err:
                    LOG.warning("could not clear %s on %s->%s: %s", kind, s, r, err)


# ---------------------------------------------------------------- os-ken adapter

CONFIG: dict = {}


def _make_app_class():
    from os_ken.base import app_manager
    from os_ken.controller import ofp_event
    from os_ken.controller.handler import (CONFIG_DISPATCHER, DEAD_DISPATCHER, MAIN_DISPATCHER,
                                           set_ev_cls)
    from os_ken.ofproto import ofproto_v1_3

    class MrcLabApp(app_manager.OSKenApp):
        """The only os-ken code: turns FlowRules into flow mods, events into controller calls."""

        OFP_VERSIONS = [ofproto_v1_3.OFP_VERSION]

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.controller: FabricController = CONFIG["controller"]
            self.controller.openflow = self
            self.datapaths = {}          # switch name -> datapath
            self.ready = set()
            self.dp_lock = threading.Lock()
            self.waiters = {}            # xid -> (event, replies list)
            self.setup_xids = {}         # barrier xid -> switch name

        # -- interface used by FabricController

        def is_connected(self, switch):
            return switch in self.datapaths

        def connected_count(self):
            return len(self.datapaths)

        def ready_count(self):
            return len(self.ready)

        def _dp(self, switch):
            dp = self.datapaths.get(switch)
            if dp is None:
                raise TimeoutError(f"switch {switch} is not connected")
            return dp

        def _flow_mod(self, dp, rule):
            ofp, parser = dp.ofproto, dp.ofproto_parser
            actions = [parser.OFPActionOutput(port) for kind, port in rule.actions
                       if kind == "output"]
            inst = [parser.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, actions)] if actions else []
            return parser.OFPFlowMod(dp, cookie=rule.cookie, table_id=rule.table,
                                     command=ofp.OFPFC_ADD, priority=rule.priority,
                                     match=parser.OFPMatch(**rule.match), instructions=inst)

        def install(self, switch, rules):
            dp = self._dp(switch)
            for rule in rules:
                dp.send_msg(self._flow_mod(dp, rule))
            self._barrier(dp)

        def delete_cookie(self, switch, cookie):
            dp = self._dp(switch)
            ofp, parser = dp.ofproto, dp.ofproto_parser
            dp.send_msg(parser.OFPFlowMod(dp, cookie=cookie, cookie_mask=(1 << 64) - 1,
                                          table_id=ofp.OFPTT_ALL, command=ofp.OFPFC_DELETE,
                                          out_port=ofp.OFPP_ANY, out_group=ofp.OFPG_ANY))
            self._barrier(dp)

        def _request(self, dp, msg, timeout=OPENFLOW_TIMEOUT_S):
            dp.set_xid(msg)
            done = threading.Event()
            self.waiters[msg.xid] = (done, [])
            try:
                dp.send_msg(msg)
                if not done.wait(timeout):
                    raise TimeoutError(f"no reply from switch {dp.id:#x} to "
                                       f"{type(msg).__name__} within {timeout} s")
                return self.waiters[msg.xid][1]
            finally:
                self.waiters.pop(msg.xid, None)

        def _barrier(self, dp):
            self._request(dp, dp.ofproto_parser.OFPBarrierRequest(dp))

        def port_stats(self):
            out = {}
            for name, dp in sorted(self.datapaths.items()):
                ofp, parser = dp.ofproto, dp.ofproto_parser
                ports = {}
                for reply in self._request(dp, parser.OFPPortStatsRequest(dp, 0, ofp.OFPP_ANY)):
                    for st in reply.body:
                        if st.port_no > ofp.OFPP_MAX:
                            continue
                        ports[str(st.port_no)] = {
                            "rx_packets": st.rx_packets, "tx_packets": st.tx_packets,
                            "rx_bytes": st.rx_bytes, "tx_bytes": st.tx_bytes,
                            "rx_dropped": st.rx_dropped, "tx_dropped": st.tx_dropped}
                out[name] = ports
            return out

        def flow_stats(self):
            out = {}
            for name, dp in sorted(self.datapaths.items()):
                ofp, parser = dp.ofproto, dp.ofproto_parser
                flows = []
                req = parser.OFPFlowStatsRequest(dp, 0, ofp.OFPTT_ALL, ofp.OFPP_ANY, ofp.OFPG_ANY)
                for reply in self._request(dp, req):
                    for st in reply.body:
                        flows.append({"table_id": st.table_id, "priority": st.priority,
                                      "match": {k: list(v) if isinstance(v, tuple) else v
                                                for k, v in st.match.items()},
                                      "packet_count": st.packet_count,
                                      "byte_count": st.byte_count, "cookie": st.cookie})
                out[name] = flows
            return out

        # -- events

        @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)
        def _on_features(self, ev):
            dp = ev.msg.datapath
            name = self.controller.dpid_to_switch.get(dp.id)
            if name is None:
                LOG.warning("ignoring unknown datapath %#x (not in the fabric spec)", dp.id)
                return
            ofp, parser = dp.ofproto, dp.ofproto_parser
            self.ready.discard(name)
            dp.send_msg(parser.OFPFlowMod(dp, table_id=ofp.OFPTT_ALL, command=ofp.OFPFC_DELETE,
                                          out_port=ofp.OFPP_ANY, out_group=ofp.OFPG_ANY))
            for rule in self.controller.rules_for(name):
                dp.send_msg(self._flow_mod(dp, rule))
            barrier = parser.OFPBarrierRequest(dp)
            dp.set_xid(barrier)
            self.setup_xids[barrier.xid] = (name, dp)
            dp.send_msg(barrier)
            self.datapaths[name] = dp
            LOG.info("switch %s (%#x) connected, %d rules sent", name, dp.id,
                     len(self.controller.installed.get(name, [])))

        @set_ev_cls(ofp_event.EventOFPStateChange, [DEAD_DISPATCHER])
        def _on_state(self, ev):
            dp = ev.datapath
            name = self.controller.dpid_to_switch.get(dp.id)
            if name and self.datapaths.get(name) is dp:
                del self.datapaths[name]
                self.ready.discard(name)
                LOG.warning("switch %s disconnected", name)

        @set_ev_cls(ofp_event.EventOFPBarrierReply, MAIN_DISPATCHER)
        def _on_barrier(self, ev):
            setup = self.setup_xids.pop(ev.msg.xid, None)
            if setup is not None:
                name, dp = setup
                if self.datapaths.get(name) is dp:
                    self.ready.add(name)
                return
            self._reply(ev.msg, more=False)

        def _reply(self, msg, more):
            waiter = self.waiters.get(msg.xid)
            if waiter is None:
                return
            waiter[1].append(msg)
            if not more:
                waiter[0].set()

        @set_ev_cls([ofp_event.EventOFPPortStatsReply, ofp_event.EventOFPFlowStatsReply],
                    MAIN_DISPATCHER)
        def _on_stats(self, ev):
            msg = ev.msg
            self._reply(msg, more=bool(msg.flags & msg.datapath.ofproto.OFPMPF_REPLY_MORE))

        @set_ev_cls(ofp_event.EventOFPPortStatus, MAIN_DISPATCHER)
        def _on_port_status(self, ev):
            msg = ev.msg
            dp, ofp = msg.datapath, msg.datapath.ofproto
            name = self.controller.dpid_to_switch.get(dp.id)
            if name is None:
                return
            desc = msg.desc
            down = bool(desc.state & ofp.OFPPS_LINK_DOWN) or bool(desc.config & ofp.OFPPC_PORT_DOWN)
            reason = {ofp.OFPPR_ADD: "add", ofp.OFPPR_DELETE: "delete",
                      ofp.OFPPR_MODIFY: "modify"}.get(msg.reason, str(msg.reason))
            if msg.reason == ofp.OFPPR_DELETE:
                down = True
            self.controller.on_port_status(name, desc.port_no, not down, reason)

    return MrcLabApp


MrcLabApp = None


def _load_spec(path: str) -> FabricSpec:
    with open(path) as f:
        data = json.load(f)
    if isinstance(data, dict) and "fabric" in data and isinstance(data["fabric"], dict):
        data = data["fabric"]
    return FabricSpec.from_dict(data)


def main(argv=None) -> int:
    global MrcLabApp
    parser = argparse.ArgumentParser(prog="python -m controller.app", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--spec-json", required=True, help="FabricSpec as JSON (to_dict())")
    parser.add_argument("--routing", choices=R.ROUTING_MODES, required=True)
    parser.add_argument("--dynamic-convergence-s", type=float, default=None)
    parser.add_argument("--of-port", type=int, default=6653)
    parser.add_argument("--api-port", type=int, default=8787)
    parser.add_argument("--fault-log", default=None)
    parser.add_argument("--buckets", type=int, default=None, help="ECMP buckets (power of two)")
    parser.add_argument("--log-level", default="INFO")
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(),
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        spec = _load_spec(args.spec_json)
        controller = FabricController(Topology(spec), args.routing, args.dynamic_convergence_s,
                                      args.fault_log, args.buckets)
    except (OSError, ValueError) as err:
        print(f"controller: {err}", file=sys.stderr)
        return 2
    if args.fault_log:
        open(args.fault_log, "a").close()

    from os_ken import cfg
    from os_ken.base.app_manager import AppManager
    cfg.CONF(args=[], project="os_ken")
    cfg.CONF.set_override("ofp_listen_host", "127.0.0.1")
    cfg.CONF.set_override("ofp_tcp_listen_port", args.of_port)
    cfg.CONF.set_override("ofp_ssl_listen_port", args.of_port + 10000 if args.of_port < 55535
                          else args.of_port - 10000)

    this = sys.modules[__name__]
    this.CONFIG["controller"] = controller
    this.MrcLabApp = _make_app_class()
    api = ApiServer(controller, args.api_port).start()
    LOG.info("API on 127.0.0.1:%d, OpenFlow on 127.0.0.1:%d, routing %s",
             api.port, args.of_port, args.routing)

    stopping = threading.Lock()

    def _cleanup_and_exit(code: int) -> None:
        """clear_all + api.stop, then os._exit: os-ken's run_apps cannot be unwound from a
        signal (its hub threads have no kill()), so nothing after this may depend on it."""
        if not stopping.acquire(blocking=False):
            return
        worker = threading.Thread(target=lambda: (controller.clear_all(), api.stop()),
                                  daemon=True, name="mrclab-shutdown")
        worker.start()
        worker.join(CLEANUP_TIMEOUT_S)
        if worker.is_alive():
            LOG.error("cleanup did not finish within %.0f s; exiting anyway", CLEANUP_TIMEOUT_S)
        else:
            LOG.info("controller stopped")
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)

    signal.signal(signal.SIGTERM, lambda signum, frame: _cleanup_and_exit(0))
    try:
        AppManager.run_apps([__name__])
    except KeyboardInterrupt:
        pass
    _cleanup_and_exit(0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
