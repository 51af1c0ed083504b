"""Lifecycle of the emulated fabric: lock, clean, build, shape, control, tear down.

    with Fabric(FabricSpec(), routing="srv6") as fab:
        fab.cmd_in_host(0, ["ping", "-6", "-c1", fab.topo.nic_addr(1, 0)])

Why built by hand instead of a Mininet Topo + TCLink: OpenFlow port numbers must equal the topology's
(the controller computes its tables before any switch exists), and tc/ip failures must raise
(TCLink logs them and carries on; netem does not exist on this kernel). All argv lists come from
emulation.network.hostnet; this module only runs them, checked.

In-fabric trimming / virtual-queue ECN (Fabric(trimming=...)): when on, every switch
egress port gets trimming.port_qdisc_commands (HTB where trimmed headers overtake full packets)
instead of the plain HTB, and the BPF program (emulation/network/bpf/trim.c) once the switches are up; at
teardown the per-port counters are written to <run_dir>/trim_counters.json and the programs are
detached. Off (the default) is exactly the fabric without it.

One fabric per machine at a time: an exclusive flock on /run/mrclab/fabric.lock, held for the whole
lifetime, so concurrent test sessions wait instead of tearing down each other's switches
(emulation/network/fabric_lock.py: root's alone, so no other user can hold it).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from controller.client import ControllerClient, ControllerError
from controller import api_auth
from emulation.cluster import remote
from emulation.cluster.fabric_servers import FabricServers
from emulation.network import (cgroups, cleanup, control_secrets, hostnet, ovs_service, ovs_sndbuf,
                               switchqueue)
from emulation.network.capture import Capture
from emulation.network.scheduling import DEFAULT_SCHEDULING, SchedulingError
from emulation.network import trimming as trim_mod
from emulation.network.fabric_lock import (  # noqa: F401 - the fabric's API
    LOCK_FILE, FabricError, FabricLockTimeout, acquire_fabric_lock, release_fabric_lock)
from model import ssh
from model.ports import API_PORT, OF_PORT
from model.proc import run_checked as run_command
from model.topology import FabricSpec, Topology

REPO_ROOT = Path(__file__).resolve().parents[2]


def run_checked(argv: list[str], timeout: float = 60, what: str = "") -> str:
    """model.proc.run_checked raising FabricError (what the fabric's callers catch)."""
    return run_command(argv, timeout=timeout, what=what, error=FabricError)


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


class Fabric:
    """Context manager owning one running fabric (see module docstring)."""

    def __init__(self, spec: FabricSpec | Topology, routing: str = "srv6",
                 dynamic_convergence_s: float | None = None, run_dir: str | Path | None = None,
                 link_options: dict | None = None, of_port: int = OF_PORT,
                 api_port: int = API_PORT, ready_timeout_s: float = 60.0,
                 trimming=None, switch_buffer_bytes: int | None = None, shaped: bool = True,
                 time_scale: float = 1.0, control_class: bool = True,
                 scheduling: str = DEFAULT_SCHEDULING, placement=None):
        """time_scale: the spec's rates are a dilated run's wall rates (emulation/calibration/time_scale.py);
        the switches' thresholds and TCP's minimum RTO follow the emulated world's.
        control_class: every port (host and switch ends) serves SACKs, NACKs and probes
        (model/dscp.py DSCP_CONTROL) ahead of data.
        scheduling: how the fabric's processes share the CPU (emulation/network/scheduling.py):
        "hifi" places ovs-vswitchd, the controller, the captures and whatever popen_in_host
        starts with a `role` in CPU groups, undone at teardown.
        placement: the servers the fabric spreads over (emulation/cluster/placement.py; None or
        one server: this machine alone). Over several, trimming and a scheduling other than
        "none" are refused: both act on this machine's processes and ports alone."""
        if routing not in ("srv6", "ecmp"):
            raise ValueError(f"routing must be 'srv6' or 'ecmp', got {routing!r}")
        if dynamic_convergence_s is not None and dynamic_convergence_s < 0:
            raise ValueError(f"dynamic_convergence_s must be >= 0, got {dynamic_convergence_s}")
        hostnet.validate_link_options(link_options)
        self.trimming = trim_mod.trimming_options(trimming)   # None = off; raises on bad input
        # drop-tail buffer of every switch egress port (None: the deep default; switchqueue.py)
        self.switch_buffer_bytes = switchqueue.validate_buffer_bytes(switch_buffer_bytes)
        if not shaped and (self.trimming is not None or self.switch_buffer_bytes is not None):
            raise ValueError("an unshaped fabric has no switch queue: trimming and "
                             "switch_buffer_bytes need shaped=True")
        # shaped=False leaves every port without HTB (no rate limit anywhere): the fabric is
        # then as fast as the userspace switches, for measuring the endpoints' own ceiling.
        self.shaped = shaped
        self.time_scale = time_scale
        self.control_class = control_class
        try:
            self.scheduling = cgroups.Scheduling(scheduling)
        except SchedulingError as err:
            raise ValueError(str(err)) from None
        self.topo = spec if isinstance(spec, Topology) else Topology(spec)
        self.spec = self.topo.spec
        self.servers = FabricServers(self.topo, placement, FabricError)
        if self.servers.clustered and (self.trimming is not None
                                       or self.scheduling.setting != "none"):
            raise ValueError("a fabric over several servers runs without trimming and with "
                             "scheduling \"none\" (docs/cluster.md)")
        self.routing = routing
        self.dynamic_convergence_s = dynamic_convergence_s
        self.run_dir = Path(run_dir) if run_dir else None
        self.of_port, self.api_port = of_port, api_port
        self.ready_timeout_s = ready_timeout_s
        self.net = None
        self.controller = None
        self.controller_proc: subprocess.Popen | None = None
        self._lock_fd: int | None = None
        self._children: list[subprocess.Popen] = []
        self._ties: dict = {}             # pid -> the open stdin that keeps a remote process alive
        self._old_handlers: dict = {}
        self._tmpdir = None
        self._trim_attached = False
        self._shaped = False
        self._token: str | None = None
        self._pki = None
        self._ovs_ssl_ours = False        # OVS's SSL setting is ours to empty at teardown

    # ------------------------------------------------------------ public helpers

    def host(self, n: int):
        return self.net.get(self.topo.host(n).name)

    def _in_host(self, n: int, argv: list[str]) -> list[str]:
        """argv in host n's network namespace, on the host's server."""
        name = self.topo.host(n).name
        return self.servers.in_host_argv(self.servers.server_of(name), self.host(n).pid, argv)

    def popen_in_host(self, n: int, argv: list[str], role: str | None = None,
                      **kw) -> subprocess.Popen:
        """Start argv in host n's network namespace; killed at teardown if still running.
        role: what the process is to the fabric's scheduling ("endpoints" for a process whose
        main thread runs a packet loop, "captures"; emulation/network/scheduling.py)."""
        name = self.topo.host(n).name
        server = self.servers.server_of(name)
        if "cwd" in kw and not self.servers.is_local(server):   # there, not in the ssh here
            argv = ["env", "-C", str(kw.pop("cwd")), *argv]
        full, tied = self.servers.popen_in_host_argv(server, self.host(n).pid, list(argv))
        if tied:                # its ssh's stdin, kept open while it runs (fabric_servers.py)
            kw = {**kw, "stdin": subprocess.PIPE}
        proc = subprocess.Popen(full, **kw)
        if tied:                # held here, out of reach of communicate(), which would close it
            self._ties[proc.pid] = proc.stdin
            proc.stdin = None
        self._children.append(proc)
        if role is not None:
            self._place(proc.pid, role)
        return proc

    def send_signal(self, proc: subprocess.Popen, signum: int) -> None:
        """Signal a process popen_in_host started: on another server through its tie (ssh
        forwards no signal; model/ssh.py), here directly."""
        tie = self._ties.get(proc.pid)
        if tie is None:
            proc.send_signal(signum)
            return
        line = ssh.signal_line(signum)
        try:
            tie.write(line if "b" in getattr(tie, "mode", "b") else line.decode())
            tie.flush()
        except OSError:         # its ssh has ended, and the command there with it
            pass

    def _place(self, pid: int, role: str) -> None:
        try:
            self.scheduling.place(pid, role)
        except (SchedulingError, cgroups.CgroupError) as err:
            raise FabricError(f"scheduling {self.scheduling.setting}: {err}") from None

    def cmd_in_host(self, n: int, argv: list[str], timeout: float = 60) -> str:
        """Run argv in host n's namespace; raise FabricError (command + stderr) on failure."""
        return run_checked(self._in_host(n, list(argv)), timeout=timeout,
                           what=self.topo.host(n).name)

    def capture(self, n: int, plane: int, path: str | Path, snaplen: int = 256) -> Capture:
        """tcpdump on h{n}-p{plane} into path; returns once tcpdump is listening."""
        intf = f"{self.topo.host(n).name}-p{plane}"
        path = Path(path)
        proc = self.popen_in_host(n, ["tcpdump", "-i", intf, "-U", "-n", "-s", str(snaplen),
                                      "-w", str(path)],
                                  role="captures",
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        line = proc.stderr.readline()  # "tcpdump: listening on ..." once the socket is open
        if "listening" not in line:
            proc.kill()
            raise FabricError(f"tcpdump on {intf} did not start: {line.strip()}")
        threading.Thread(target=proc.stderr.read, daemon=True).start()
        return Capture(proc, path, intf)

    # ------------------------------------------------------------ lifecycle

    def __enter__(self) -> "Fabric":
        self._lock_fd = acquire_fabric_lock()
        try:
            self._install_signal_handlers()
            try:
                ovs_service.ensure_ovs_running()
            except ovs_service.OvsNotRunning as err:
                raise FabricError(str(err)) from None
            cleanup.clean()
            self._clean_other_servers()
            self._start()
        except BaseException:
            self._teardown(raise_errors=False)
            raise
        return self

    def _clean_other_servers(self) -> None:
        """A crashed fabric's leftovers on the other servers go first, as this machine's do."""
        if self.servers.clustered:
            failed = remote.clean_others(self.servers.servers, say=lambda line: None)
            if failed:
                raise FabricError("cleaning the other servers: " + "; ".join(failed))

    def __exit__(self, exc_type, exc, tb) -> None:
        self._teardown(raise_errors=exc_type is None)

    def _install_signal_handlers(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return

        def on_term(signum, frame):
            raise SystemExit(128 + signum)

        self._old_handlers = {signal.SIGTERM: signal.signal(signal.SIGTERM, on_term)}
        if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
            self._old_handlers[signal.SIGINT] = signal.signal(signal.SIGINT,
                                                              signal.default_int_handler)

    def _restore_signal_handlers(self) -> None:
        for sig, handler in self._old_handlers.items():
            signal.signal(sig, handler)
        self._old_handlers = {}

    def _start(self) -> None:
        from mininet.link import Link
        from mininet.log import setLogLevel
        from mininet.net import Mininet
        from mininet.node import Host, OVSSwitch

        if not os.environ.get("MRCLAB_MININET_LOG"):
            setLogLevel("warning")
        if self.run_dir is None:
            self._tmpdir = tempfile.TemporaryDirectory(prefix="mrclab-fabric-")
            self.run_dir = Path(self._tmpdir.name)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        # Before any bridge exists: OVS's one shared transmit socket must be born with a big
        # send buffer, or queued packets make it drop silently (emulation/network/ovs_sndbuf.py).
        # Needs the fabric lock, held since __enter__ (it may restart ovs-vswitchd).
        try:
            ovs_sndbuf.ensure_ovs_tx_buffer(ovs_sndbuf.tx_sndbuf_for_mtu(self.spec.mtu))
        except ovs_sndbuf.SendBufferError as err:
            raise FabricError(str(err)) from None
        self._start_scheduling()
        self._start_controller()

        net = Mininet(topo=None, controller=None, build=False, switch=OVSSwitch, host=Host,
                      link=Link, autoSetMacs=False, autoStaticArp=False, cleanup=False)
        self.net = net
        where = self.servers
        for h in self.topo.hosts:
            net.addHost(h.name, ip=None, **where.node_params(h.name, host=True))
        for sw in self.topo.switches.values():
            net.addSwitch(sw.name, **{"cls": OVSSwitch, **where.node_params(sw.name, host=False)},
                          dpid=f"{sw.dpid:016x}", datapath="user",
                          protocols="OpenFlow13,OpenFlow15", failMode="secure")
        for link in self.topo.links:
            if link.kind == "host":
                host_n = self.topo.host(link.a).index
                net.addLink(link.a, link.b, port1=link.plane, port2=link.b_port,
                            intfName1=link.a_intf, intfName2=link.b_intf,
                            addr1=self.topo.nic_mac(host_n, link.plane),
                            **where.link_params(link))
            else:
                net.addLink(link.a, link.b, port1=link.a_port, port2=link.b_port,
                            intfName1=link.a_intf, intfName2=link.b_intf,
                            **where.link_params(link))
        # Every switch port's receive socket is born while its port is added: with rmem_default
        # raised it holds RX_FRAMES_PER_PORT frames of this MTU (emulation/network/ovs_sndbuf.py).
        try:
            with ovs_sndbuf.raised_rmem_default(ovs_sndbuf.rx_rcvbuf_for_mtu(self.spec.mtu)):
                net.build()
                net.start()
                self._verify_ofports()
                self._configure_hosts()
                self._configure_switch_intfs()
        except ovs_sndbuf.SendBufferError as err:
            raise FabricError(str(err)) from None
        if self.shaped:
            self._shaped = True      # from here on teardown snapshots the queue counters
            self._shape_links()
        self._attach_trimming()
        self._connect_switches()
        self._wait_controller_ready()
        # a host of another server by its shell's pid there (the controller's faults enter it
        # there, controller/servers.py)
        self.controller.register_hosts({h.name: self.host(h.index).pid for h in self.topo.hosts})

    def _connect_switches(self) -> None:
        """Every server's Open vSwitch: the fabric's TLS key (refused when OVS has a foreign
        one), then its bridges pointed at the controller."""
        where = self.servers
        for server in where.servers:
            current = control_secrets.parse_get_ssl(where.run(
                server, control_secrets.ovs_get_ssl_argv(),
                what="reading Open vSwitch's SSL configuration"))
            foreign = control_secrets.foreign_ssl_error(current)
            if foreign is not None:
                raise FabricError(f"{server}: {foreign}" if where.clustered else foreign)
        self._ovs_ssl_ours = True        # from here on teardown undoes it on every server
        where.install_switch_keys(self._pki)
        for server in where.servers:
            where.run(server, control_secrets.ovs_ssl_argv(self._pki),
                      what="giving the switches their OpenFlow TLS key")
            where.run(server, hostnet.set_controller_argv(
                where.bridges_on(server), where.controller_target(server, self.of_port)),
                what="pointing bridges at the controller")

    def _start_scheduling(self) -> None:
        """The scheduling's CPU groups, ovs-vswitchd in its own (nothing under "none"); after
        the send-buffer check, which may restart ovs-vswitchd."""
        try:
            self.scheduling.start()
        except (SchedulingError, cgroups.CgroupError) as err:
            raise FabricError(f"scheduling {self.scheduling.setting}: {err}") from None
        if not self.scheduling.active:
            return
        try:
            pid = int(Path(ovs_service.SWITCHD_PID_FILE).read_text().split()[0])
        except (OSError, ValueError, IndexError) as err:
            raise FabricError(f"scheduling {self.scheduling.setting}: no ovs-vswitchd pid in "
                              f"{ovs_service.SWITCHD_PID_FILE}: {err}") from None
        self._place(pid, "switches")

    def _start_controller(self) -> None:
        spec_file = self.run_dir / "spec.json"
        spec_file.write_text(json.dumps(self.spec.to_dict()))
        log = self.run_dir / "controller.log"
        # The secrets only this fabric's owner holds (emulation/network/control_secrets.py).
        token_file = api_auth.token_path(self.api_port)
        try:
            self._token = api_auth.write_new_token(token_file)
            self._pki = control_secrets.make_pki()
            control_secrets.ensure_private_dir(control_secrets.ENDPOINT_DIR)
        except (OSError, control_secrets.SecretsError) as err:
            raise FabricError(f"making the control plane's secrets: {err}") from None
        pki = self._pki
        argv = [sys.executable, "-m", "controller.app", "--spec-json", str(spec_file),
                "--routing", self.routing, "--of-port", str(self.of_port),
                "--api-port", str(self.api_port), "--token-file", token_file,
                "--of-host", self.servers.controller_listen_host(),
                "--of-ca", pki.ca_cert, "--of-key", pki.controller_key,
                "--of-cert", pki.controller_cert, "--endpoint-dir", control_secrets.ENDPOINT_DIR,
                "--fault-log", str(self.run_dir / "faults.jsonl")]
        if self.dynamic_convergence_s is not None:
            argv += ["--dynamic-convergence-s", str(self.dynamic_convergence_s)]
        if self.servers.clustered:
            remote_file = self.run_dir / "remote_nodes.json"
            remote_file.write_text(json.dumps(self.servers.remote_nodes()))
            argv += ["--remote-nodes-json", str(remote_file)]
        self._controller_log = log
        with open(log, "ab") as out:
            self.controller_proc = subprocess.Popen(argv, cwd=REPO_ROOT, stdout=out,
                                                    stderr=subprocess.STDOUT,
                                                    stdin=subprocess.DEVNULL,
                                                    start_new_session=True)
        Path(cleanup.CONTROLLER_PID_FILE).write_text(f"{self.controller_proc.pid}\n")
        self._place(self.controller_proc.pid, "controller")
        self.controller = ControllerClient(port=self.api_port, token=self._token)

    def _wait_controller_ready(self) -> None:
        deadline = time.monotonic() + self.ready_timeout_s
        last = "no answer"
        probe = ControllerClient(port=self.api_port, timeout_s=2.0,   # a start-up poll: short
                                 token=self._token)
        while time.monotonic() < deadline:
            if self.controller_proc.poll() is not None:
                raise FabricError(f"controller exited with code {self.controller_proc.returncode} "
                                  f"before it was ready; log {self._controller_log}:\n"
                                  f"{_tail(self._controller_log)}")
            try:
                health = probe.health()
                last = json.dumps(health)
                connected = (health.get("switches_connected") == health.get("switches_expected")
                             == len(self.topo.switches))
                if health.get("ok") and health.get("ready", connected) and connected:
                    return
            except ControllerError as e:
                last = str(e)
            time.sleep(0.2)
        raise FabricError(f"controller not ready after {self.ready_timeout_s:.0f}s "
                          f"(last /health: {last}); log {self._controller_log}:\n"
                          f"{_tail(self._controller_log)}")

    def _verify_ofports(self) -> None:
        for link in self.topo.links:
            ends = [(link.b_intf, link.b_port)]
            if link.kind == "fabric":
                ends.append((link.a_intf, link.a_port))
            for intf, port in ends:
                got = self.servers.run(self.servers.server_of_intf(intf),
                                       hostnet.ofport_query_argv(intf),
                                       what="ofport check").strip()
                if got != str(port):
                    raise FabricError(f"OpenFlow port of {intf} is {got}, topology says {port}")

    def _configure_hosts(self) -> None:
        for h in self.topo.hosts:
            for argv in hostnet.host_argvs(self.topo, h.index, self.time_scale):
                self.cmd_in_host(h.index, argv)

    def _configure_switch_intfs(self) -> None:
        self.servers.run_per_server(
            [(intf, argv) for intf in self.switch_intfs()
             for argv in hostnet.switch_intf_argvs(intf, self.topo.spec.mtu)],
            what="configuring the switch ports")

    def _switch_port_qdisc(self, intf: str, mbit: float) -> list[list[str]]:
        if self.trimming is not None:
            argvs = trim_mod.port_qdisc_commands(intf, mbit, control_class=self.control_class)
            leaves = list(trim_mod.LEAF_CLASSES)
        else:
            argvs = hostnet.htb_argvs(intf, mbit, self.spec.mtu, self.control_class)
            leaves = (list(hostnet.CONTROL_LEAF_CLASSES) if self.control_class
                      else [hostnet.HTB_CLASS])
        if self.switch_buffer_bytes is not None:
            argvs += switchqueue.buffer_argvs(intf, leaves, self.switch_buffer_bytes)
        return argvs

    def switch_intfs(self) -> list[str]:
        """Every switch-side interface (the switch egress ports), in topology order."""
        out = []
        for link in self.topo.links:
            out += [link.b_intf] if link.kind == "host" else [link.a_intf, link.b_intf]
        return out

    def queue_counters(self) -> dict:
        """{switch egress interface: its queue's counters} (sent, dropped, backlog) from tc."""
        where = self.servers
        return {intf: switchqueue.parse_root_stats(
                    where.run(where.server_of_intf(intf), switchqueue.stats_argv(intf),
                              what=f"queue counters of {intf}"), intf)
                for intf in self.switch_intfs()}

    def _snapshot_queue_counters(self) -> list[str]:
        """queue_counters.json into run_dir before the ports go; returns errors."""
        if self.run_dir is None:
            return []
        try:
            per_port = self.queue_counters()
            (self.run_dir / "queue_counters.json").write_text(json.dumps(
                {"t_ns": time.monotonic_ns(), "switch_buffer_bytes": self.switch_buffer_bytes,
                 "totals": switchqueue.totals(per_port), "ports": per_port}, indent=1))
        except Exception as e:  # noqa: BLE001 - reported, teardown continues
            return [f"reading queue counters failed: {e}"]
        return []

    def _shape_links(self) -> None:
        """HTB on both ends of every link (host ends inside the host namespace); switch ends
        get the header-priority HTB when trimming is on; every end a control class
        (control_class)."""
        switch_ends = []
        for link in self.topo.links:
            if link.kind == "host":
                n = self.topo.host(link.a).index
                for argv in hostnet.htb_argvs(link.a_intf, link.mbit, self.spec.mtu,
                                              self.control_class):
                    self.cmd_in_host(n, argv)
                switch_ends.append((link.b_intf, link.mbit))
            else:
                switch_ends += [(link.a_intf, link.mbit), (link.b_intf, link.mbit)]
        self.servers.run_per_server(
            [(intf, argv) for intf, mbit in switch_ends
             for argv in self._switch_port_qdisc(intf, mbit)], what="shaping the switch ports")

    def _attach_trimming(self) -> None:
        """BPF virtual queue on every switch egress port (root namespace), when asked for."""
        if self.trimming is None:
            return
        self._trim_attached = True   # from here on teardown detaches (also after a failure)
        try:
            applied = trim_mod.attach_fabric(self.topo, self.trimming.mark, self.trimming.trim,
                                             time_scale=self.time_scale)
        except (trim_mod.TrimmingError, ValueError) as e:
            raise FabricError(f"attaching the trimming program: {e}") from None
        (self.run_dir / "trimming.json").write_text(json.dumps(
            {"mark": self.trimming.mark, "trim": self.trimming.trim,
             "ports": {intf: {"rate_mbit": c.rate_mbit, "ecn_min_bytes": c.ecn_min_bytes,
                              "ecn_max_bytes": c.ecn_max_bytes, "trim_bytes": c.trim_bytes,
                              "last_hop": c.last_hop, "mark": c.mark, "trim": c.trim}
                       for intf, c in applied.items()}}, indent=1))

    def trim_counters(self) -> dict:
        """{switch egress interface: counters} of the trimming program ({} when off)."""
        if not self._trim_attached:
            return {}
        return trim_mod.fabric_counters(self.topo)

    def _finish_trimming(self) -> list[str]:
        """Counters snapshot into run_dir, then detach; returns errors (teardown goes on)."""
        if not self._trim_attached:
            return []
        errors = []
        try:
            per_port = trim_mod.fabric_counters(self.topo)
            if self.run_dir is not None and per_port:
                snapshot = {"t_ns": time.monotonic_ns(),
                            "mark": self.trimming.mark, "trim": self.trimming.trim,
                            "totals": trim_mod.counter_totals(per_port,
                                                              trim_mod.last_hop_ports(self.topo)),
                            "ports": per_port}
                (self.run_dir / "trim_counters.json").write_text(json.dumps(snapshot, indent=1))
        except Exception as e:  # noqa: BLE001 - reported, teardown continues
            errors.append(f"reading trim counters failed: {e}")
        try:
            trim_mod.detach_fabric(self.topo)
        except Exception as e:  # noqa: BLE001
            errors.append(f"detaching the trimming program failed: {e}")
        self._trim_attached = False
        return errors

    # ------------------------------------------------------------ teardown

    def _teardown(self, raise_errors: bool) -> None:
        errors = []
        try:
            for proc in self._children:
                if proc.poll() is None:
                    proc.kill()
                try:
                    proc.wait(5)
                except subprocess.TimeoutExpired:
                    errors.append(f"child pid {proc.pid} did not exit")
            self._children = []
            for tie in self._ties.values():
                tie.close()
            self._ties = {}
            if self.net is not None:
                if self._shaped:
                    errors += self._snapshot_queue_counters()
                errors += self._finish_trimming()
            if self.controller_proc is not None:
                if self.controller_proc.poll() is None:
                    self.controller_proc.terminate()
                    try:
                        self.controller_proc.wait(3)
                    except subprocess.TimeoutExpired:
                        self.controller_proc.kill()
                        self.controller_proc.wait(5)
                self.controller_proc = None
                try:
                    os.unlink(cleanup.CONTROLLER_PID_FILE)
                except FileNotFoundError:
                    pass
            if self.net is not None:
                errors += self.servers.delete_bridges()
                try:
                    self.net.stop()
                except Exception as e:  # keep going: the sweep below removes the rest
                    errors.append(f"net.stop failed: {e!r}")
                self.net = None
            if self._ovs_ssl_ours:
                self._ovs_ssl_ours = False
                errors += self.servers.remove_switch_keys()
            errors += [f"undoing the scheduling: {e}" for e in self.scheduling.stop()]
            control_secrets.remove(self.api_port)
            try:
                for family, name in cleanup.nft_tables():
                    if cleanup.is_our_nft_table(name):
                        run_checked(["nft", "delete", "table", family, name], what="teardown")
            except Exception as e:
                errors.append(f"removing nft tables failed: {e}")
            try:
                left = cleanup.find_leftovers()
                if not left.empty():
                    errors.append(f"left after stop: {left.describe()}")
                    cleanup.clean()
            except Exception as e:
                errors.append(f"final cleanup failed: {e}")
        finally:
            self._restore_signal_handlers()
            if self._lock_fd is not None:
                release_fabric_lock(self._lock_fd)
                self._lock_fd = None
        if errors:
            msg = "fabric teardown: " + "; ".join(errors)
            print(f"mrclab: {msg}", file=sys.stderr)
            if raise_errors and any(not e.startswith("left after stop") for e in errors):
                raise FabricError(msg)
