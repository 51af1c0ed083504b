"""FabricController: the controller's one stateful object, backend of the HTTP API
(controller.api) and of the os-ken adapter (controller.openflow_app).

It owns no logic of its own: a fault command becomes a typed action (controller.actions), the
planner turns it into commands and the next fault state (controller.planner), the executor
runs them (controller.executor); port events and reconvergence go through the routing state
(controller.routing_state); flaps and reconvergence delays run on the scheduler. One lock
orders all of it, so the state always matches what has been applied.
"""
from __future__ import annotations

import logging
import threading

from controller import actions as A
from controller import counters
from controller import faults as F
from controller import planner as P
from controller import routing as R
from controller.api import CommandError
from controller.bpf_maps import TrimmingError
from controller.commands import CancelFlap, InstallRules, StartFlap
from controller.denylist import DenylistService
from controller.executor import Executor, run_checked
from controller.fault_log import FaultLog
from controller.host_namespaces import checked_host_namespaces
from controller.servers import RemoteNodes
from controller.routing_state import RoutingState
from controller.scheduler import Scheduler
from model import faults as fault_kinds
from model.events import ControllerLog
from model.topology import Topology

LOG = logging.getLogger("mrclab.controller")


class FabricController:
    """`run` runs one external command and raises CommandError if it fails (tests pass a
    recorder); `endpoint_dir` is the only directory whose sockets POST /endpoints takes (None:
    any absolute path, for tests without a fabric); `openflow` is set by the os-ken adapter once it runs (install, delete_cookie,
    is_connected, connected_count, ready_count, port_stats, flow_stats)."""

    def __init__(self, topo: Topology, routing_mode: str, dynamic_convergence_s: float | None,
                 fault_log_path: str | None, buckets: int | None = None, run=run_checked,
                 endpoint_dir: str | None = None, remote: RemoteNodes | None = None):
        if routing_mode not in R.ROUTING_MODES:
            raise ValueError(f"routing must be one of {R.ROUTING_MODES}, got {routing_mode!r}")
        if dynamic_convergence_s is not None and routing_mode != "ecmp":
            raise ValueError("--dynamic-convergence-s only applies to --routing ecmp")
        if dynamic_convergence_s is not None and dynamic_convergence_s < 0:
            raise ValueError("--dynamic-convergence-s must be >= 0")
        self.topo = topo
        self.mode = routing_mode
        self.convergence_s = dynamic_convergence_s
        self.routing = RoutingState(topo, routing_mode, buckets if buckets is not None
                                    else R.default_buckets(topo.spec.spines))
        self.state = P.FaultState()
        self.host_namespaces: dict = {}     # host name -> HostNamespace (an open handle)
        self.remote = remote or RemoteNodes()   # the nodes on other servers
        self.remote_host_pids: dict = {}    # host name -> its shell's pid there
        self.run = run
        self.openflow = None
        self.lock = threading.RLock()
        self.fault_log = FaultLog(fault_log_path)
        self.scheduler = Scheduler()
        self.executor = Executor(run, lambda: self.openflow, self._start_flap, self._cancel_flap,
                                 self.remote.argv)
        self.dpid_to_switch = {sw.dpid: name for name, sw in topo.switches.items()}
        self.denylist = DenylistService(topo, socket_dir=endpoint_dir)

    # ------------------------------------------------------------ views

    @property
    def buckets(self) -> int:
        return self.routing.buckets

    @property
    def routed_around(self) -> frozenset:
        return self.routing.routed_around

    @property
    def installed(self) -> dict:
        return self.routing.installed

    @property
    def flaps(self) -> frozenset:
        """Links ({a, b}) with a flap still running."""
        return self.scheduler.running()

    def log(self, entry: dict) -> dict:
        return self.fault_log.append(entry)

    # ------------------------------------------------------------ routing (adapter calls)

    def rules_for(self, switch: str) -> list[R.FlowRule]:
        """Rules for a (re)connecting switch: routing for the links routed around now, plus
        an active blackhole."""
        with self.lock:
            rules = self.routing.rules_for(switch)
            if switch in self.state.blackholes:
                rules = rules + [F.blackhole_rule(self.topo, switch)]
        return rules

    def on_port_status(self, switch: str, port: int, up: bool, reason: str) -> None:
        with self.lock:
            change = self.routing.port_status(switch, port, up)
            if change is None:
                return
            snapshot = self.routing.down_links(self.state.admin_down)
        entry = {"action": ControllerLog.PORT_STATUS, "switch": switch, "port": port,
                 "state": "up" if up else "down", "reason": reason}
        if change.link is not None:
            entry.update(a=change.link.a, b=change.link.b)
        self.log(entry)
        if self.convergence_s is not None:
            self.scheduler.after(self.convergence_s, self._reconverge, snapshot)

    def _reconverge(self, down: frozenset) -> None:
        """Recompute ECMP buckets around `down` and resend only the rules that changed."""
        try:
            with self.lock:
                updates = self.routing.reconverge(down)
            if updates is None:
                return
            of = self.openflow
            self.executor.execute([InstallRules(name, tuple(changed))
                                   for name, changed in updates.items()
                                   if of is not None and of.is_connected(name)])
            self.log({"action": ControllerLog.RECONVERGE,
                      "down_links": sorted(sorted(p) for p in down),
                      "switches_updated": sorted(updates)})
        except Exception:
            LOG.exception("reconvergence failed")

    # ------------------------------------------------------------ faults

    def fault(self, cmd) -> dict:
        action = A.parse(cmd, self.topo)
        with self.lock:
            extra = self._apply(action)
            entry = self.log({**action.as_dict(), **extra})
        return {"ok": True, "t_ns": entry["t_ns"], "fault": action.as_dict()}

    def fault_batch(self, cmds) -> dict:
        """Faults applied as nftables tables (gray_loss, ecn_mark and their clears), many links
        at one instant: every command is checked and planned before anything runs, then the
        kernel gets one nft transaction per network namespace (planner.merge_nft_steps). One
        log entry per command, as POST /fault would write."""
        if not isinstance(cmds, list) or not cmds:
            raise ValueError("POST /faults takes a non-empty JSON list of fault commands")
        actions = [A.parse(cmd, self.topo) for cmd in cmds]
        others = sorted({a.name for a in actions if not fault_kinds.kind(a.name).nft_applied})
        if others:
            raise ValueError(f"POST /faults takes only faults applied as nftables tables "
                             f"({', '.join(k.action for k in fault_kinds.KINDS if k.nft_applied)}); "
                             f"send {', '.join(others)} with POST /fault")
        with self.lock:
            state, steps, extras = self.state, [], []
            for action in actions:
                plan = P.plan(action, state, self._context(action))
                steps += plan.steps
                state = plan.state
                extras.append(dict(plan.log_extra))
            for step in P.merge_nft_steps(self.state, steps, server_of=self.remote.server_of):
                self.executor.execute(step.commands)
                self.state = step.state
            for note in (n for extra in extras for n in extra.get("notes", ())):
                LOG.warning("%s", note)
            entries = [self.log({**action.as_dict(), **extra})
                       for action, extra in zip(actions, extras)]
        return {"ok": True, "t_ns": entries[0]["t_ns"],
                "faults": [action.as_dict() for action in actions]}

    def _context(self, action: A.FaultAction) -> P.PlanContext:
        """What the planner needs to know about the running system for `action`."""
        of = self.openflow
        connected = None if of is None else frozenset(
            name for name in self.topo.switches if of.is_connected(name))
        pids = {name: ns.path for name, ns in self.host_namespaces.items()}
        ctx = P.PlanContext(self.topo, {**pids, **self.remote_host_pids}, connected)
        leaves = {pair: F.htb_leaf_classes(self.run(self.remote.argv(pair[0], argv)))
                  for pair, argv in P.degrade_queries(action, self.state, ctx).items()}
        markers = frozenset()
        if isinstance(action, A.EcnMark):
            # the BPF markers are this machine's (a fabric over servers runs without them)
            ports = [F.intf_of(self.topo, s, r) for s, r in action.directed_pairs()
                     if not F.is_host(self.topo, s) and not self.remote.is_remote(s)]
            markers = frozenset(p for p in ports if counters.marker_active(p, run_checked))
        return P.PlanContext(self.topo, ctx.host_pids, connected, leaves, markers)

    def _apply(self, action: A.FaultAction) -> dict:
        """Plan `action` and run it step by step; the state follows each completed step."""
        plan = P.plan(action, self.state, self._context(action))
        for step in plan.steps:
            self.executor.execute(step.commands)
            self.state = step.state
        for note in plan.log_extra.get("notes", ()):
            LOG.warning("%s", note)
        return dict(plan.log_extra)

    def _start_flap(self, cmd: StartFlap) -> None:
        a, b = cmd.a, cmd.b

        def step(up: bool, cancelled) -> None:
            with self.lock:
                if cancelled():
                    return
                change = P.link_state_step(self.state, self.topo, a, b, up)
                self.executor.execute(change.commands)
                self.state = change.state
            self.log({"action": ControllerLog.FLAP_STEP, "a": a, "b": b,
                      "state": "up" if up else "down"})

        def failed(err: Exception) -> None:
            LOG.error("flap of %s-%s failed: %s", a, b, err)
            self.log({"action": ControllerLog.FLAP_ERROR, "a": a, "b": b, "error": str(err)})

        self.scheduler.start_sequence(frozenset((a, b)), F.flap_schedule(cmd.period_s, cmd.count),
                                      step, failed, name=f"flap-{a}-{b}")

    def _cancel_flap(self, cmd: CancelFlap) -> None:
        self.scheduler.cancel(frozenset((cmd.a, cmd.b)))

    def clear_all(self) -> None:
        """Best effort at exit: stop flaps, remove the nft tables and degrades we made."""
        with self.lock:
            for pair in self.scheduler.running():
                self.scheduler.cancel(pair)
            for action in P.clear_actions(self.state):
                try:
                    self._apply(action)
                except Exception as err:
                    LOG.warning("could not clear %s on %s->%s: %s", action.name, action.a,
                                action.b, err)

    # ------------------------------------------------------------ API backend

    def health(self) -> dict:
        of = self.openflow
        return {"ok": True, "routing": self.mode,
                "switches_connected": of.connected_count() if of else 0,
                "switches_expected": len(self.topo.switches),
                "ready": bool(of and of.ready_count() == len(self.topo.switches)),
                "dynamic_convergence_s": self.convergence_s, "ecmp_buckets": self.buckets}

    def register_hosts(self, pids) -> dict:
        remote = self.remote.host_pids(self.topo, pids) if isinstance(pids, dict) else {}
        here = pids if not remote else {n: p for n, p in pids.items() if n not in remote}
        clean = checked_host_namespaces(self.topo, here) if here or not remote else {}
        with self.lock:
            self.remote_host_pids.update(remote)
            for name, ns in clean.items():
                old = self.host_namespaces.get(name)
                if old is not None:
                    old.close()
                self.host_namespaces[name] = ns
            return {"ok": True, "hosts": sorted({*self.host_namespaces, *self.remote_host_pids})}

    def links(self) -> list:
        with self.lock:
            state = self.state
            down = self.routing.down_links(state.admin_down)
        flapping = self.scheduler.running()
        out = []
        for link in self.topo.links:
            pair = frozenset((link.a, link.b))
            fl = [{"action": kind, "from": s, "to": r, **params}
                  for (kind, s, r), params in state.active.items() if frozenset((s, r)) == pair]
            if pair in flapping:
                fl.append({"action": "flap"})
            for node in (link.a, link.b):
                if node in state.blackholes:
                    fl.append({"action": "blackhole", "node": node})
            out.append({"a": link.a, "b": link.b, "a_intf": link.a_intf,
                        "b_intf": link.b_intf, "plane": link.plane, "kind": link.kind,
                        "state": "down" if pair in down else "up", "faults": fl})
        return out

    def faults(self) -> list:
        return self.fault_log.entries()

    def port_counters(self) -> dict:
        return self._require_openflow().port_stats()

    def flow_counters(self) -> dict:
        return self._require_openflow().flow_stats()

    def trim_counters(self) -> dict:
        """Per switch egress port counters of the trimming program (see controller.counters)."""
        try:
            return counters.trim_counters(self.topo, run_checked)
        except TrimmingError as err:
            raise CommandError(str(err)) from None

    # ------------------------------------------------------------ denylist (endpoints act on it)

    def register_endpoints(self, sockets) -> dict:
        return self.denylist.register(sockets)

    def deny(self, command) -> dict:
        return self._denylist_change(self.denylist.deny, command)

    def allow(self, command) -> dict:
        return self._denylist_change(self.denylist.allow, command)

    def denylist_state(self) -> dict:
        return self.denylist.state()

    def ev_events(self, body) -> dict:
        """{"host": "h0", "events": [EV events as traffic/core/ev_events.py delivers them]}: each is
        logged on the run's time line (action ev_event), as mrc_ctl.h's EV event queue hands
        them to a controller."""
        if not isinstance(body, dict) or not isinstance(body.get("host"), str) \
                or not isinstance(body.get("events"), list):
            raise ValueError('ev_events needs {"host": "<name>", "events": [...]}')
        host = body["host"]
        if host not in {h.name for h in self.topo.hosts}:
            raise ValueError(f"ev_events: unknown host {host!r}")
        fields = ("t_ns", "qp", "peer", "ev", "plane", "old", "new", "state", "reason",
                  "drop_count")
        for event in body["events"]:
            if not isinstance(event, dict) or "ev" not in event or "new" not in event:
                raise ValueError(f"ev_events: an event needs at least ev and new, got {event!r}")
        for event in body["events"]:
            entry = {"action": ControllerLog.EV_EVENT, "host": host,
                     **{("endpoint_t_ns" if k == "t_ns" else k): event[k]
                        for k in fields if k in event}}
            self.log(entry)
        return {"ok": True, "logged": len(body["events"])}

    def _denylist_change(self, change, command) -> dict:
        """Apply, then record in the fault log: a denial is a control-plane action on the run's
        time line, like a fault (the runner's summary reads it from there)."""
        result = change(command)
        rule = result["rule"]
        entry = {"action": result["action"], "rule": rule, "what": result["what"],
                 "reason": result["reason"], "t_ns": result["t_ns"]}
        if "link" in rule:
            entry["a"], entry["b"] = rule["link"].split("~")
        self.log(entry)
        return result

    def _require_openflow(self):
        if self.openflow is None:
            raise TimeoutError("OpenFlow side not running")
        return self.openflow
