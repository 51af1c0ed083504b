"""A transport's run over several servers (emulation/run/runner.py): what a run on one machine
gets from its own filesystem and /run, brought to the other servers and back.

On each other server, for the run's lifetime:
    a staging directory, STAGING_ROOT/<run>/<transport>/ (with pcaps/): what the run's processes
        there write (the workers' event logs, the captures) and read (the worker config, its
        log_dir pointing there; the stop file, published there as the runner writes it here).
        The run directory here is not assumed to exist there: servers share no filesystem.
    the endpoints' control socket directory, at the same path as here (each server's /run is its
        own), each socket forwarded to the same path here over ssh (-L), so the controller and
        the path monitor reach every endpoint as on one machine. The forward connects as the ssh
        login, which must be root: the sockets are root's (docs/cluster.md).
While the run goes on, each remote worker's event log is followed over ssh into the run
directory here (the fault schedule and the progress read it), its times moved onto this
machine's clock by the start alignment. At the end the staging directory is fetched back whole
(tar over ssh) and replaces what was followed: event logs and captures moved onto this
machine's clock by the start and end alignment (model/retime.py), then removed there; the
server's ovs-vswitchd stall lines come too, for the fidelity monitor's OVS check.

Each server's clock is measured against this machine's at prepare() and at collect()
(emulation/cluster/server_clock.py); record() is what the run's summary keeps of it.
On one server every method is a no-op and every path the run directory's own.
"""
from __future__ import annotations

import dataclasses
import io
import json
import re
import select
import shlex
import subprocess
import tarfile
import threading
import time
from pathlib import Path

from analysis.cpu_usage import usage_in_window
from analysis.fidelity_windows import OVS_LOG, other_ovs_log
from analysis.sched_profile import profile_in_window
from emulation.cluster import preflight, server_clock, server_meter
from model import retime, ssh, traffic_end
from model.clockalign import CLOCKS_FILE, Alignment, ClockError, Estimate

STAGING_ROOT = "/var/tmp/mrclab-runs"
FORWARD_READY_S = 15.0          # how long the socket forwards may take to listen here
FETCH_TIMEOUT_S = 300.0
PUBLISH_TIMEOUT_S = 10.0
# A file published to a server: its name and its one line, read from a connection kept open for
# the run (a new ssh per file takes a login, longer than a few iterations on a loaded machine);
# each written in one rename and acknowledged. It ends with its input.
PUBLISH_SCRIPT = ('cd "$1" || exit 1; while IFS= read -r name && IFS= read -r body; do '
                  'printf "%s\\n" "$body" > ".$name.tmp" && mv ".$name.tmp" "$name" && '
                  'echo "ok $name"; done')
WALL_MINUS_MONO = ("import time; m = time.monotonic_ns(); w = time.time_ns(); "
                   "print(w - m - (time.monotonic_ns() - m) // 2)")


class RunServersError(RuntimeError):
    """A step of a run over servers failed; the message names the server and the step."""


class RunServers:
    """RunServers(fabric, run directory of the transport, control socket dir or None)."""

    def __init__(self, fab, tdir: Path, control_dir: str | None = None):
        self.fab = fab
        self.servers = fab.servers                 # FabricServers
        self.tdir = Path(tdir)
        self.control_dir = control_dir
        self.remote = [s for s in self.servers.servers if not self.servers.is_local(s)]
        self.run = f"{self.tdir.parent.name}/{self.tdir.name}"
        self.start: dict[str, Estimate] = {}
        self.end: dict[str, Estimate] = {}
        self.wall_minus_mono: dict[str, int] = {}
        self.errors: list[str] = []
        self._streams: list[_RemoteLines] = []
        self._open: list = []
        self.cpu_samples: dict[str, list] = {}     # server -> [(CpuSample, hz, ncpu)]
        self.sched_samples: dict[str, list] = {}   # server -> [SchedSample]
        self._forwards: list[subprocess.Popen] = []
        self._fetched: list[str] = []
        self._publishers: dict[str, subprocess.Popen] = {}

    @property
    def clustered(self) -> bool:
        return bool(self.remote)

    def server_of_host(self, host: str) -> str:
        return self.servers.server_of(host)

    def is_remote(self, host: str) -> bool:
        return not self.servers.is_local(self.server_of_host(host))

    def dir_of(self, host: str) -> Path:
        """Where the processes of `host` read and write the run's files."""
        server = self.server_of_host(host)
        return Path(self.staging(server)) if self.is_remote(host) else self.tdir

    def staging(self, server: str) -> str:
        """The staging directory on `server`, named by the server too: servers that share a
        filesystem (local servers) keep theirs apart."""
        return f"{STAGING_ROOT}/{_safe(server)}/{self.run}"

    # ------------------------------------------------------------ before the workers

    def prepare(self, worker_json: Path) -> None:
        """Every other server's staging directory with its copy of the worker config (log_dir
        pointing there), its control socket directory, its clock's start measurement, its
        publishing connection, the forwards of its endpoints' sockets and its CPU meter."""
        for server in self.remote:
            self._run(server, ["sh", "-c", self._mkdirs_script(server)], "the staging directory")
            config = json.loads(worker_json.read_text())
            config["log_dir"] = self.staging(server)
            self.servers.commands.put(server, f"{self.staging(server)}/worker.json",
                                      json.dumps(config), mode=0o644, what="the worker config")
            self.wall_minus_mono[server] = int(self._run(
                server, [str(preflight.REPO / ".venv/bin/python"), "-c",
                         WALL_MINUS_MONO], "the wall clock's reading").strip())
            self.start[server] = self._measure(server)
            self._publishers[server] = subprocess.Popen(
                ssh.root_argv(server, ["sh", "-c", PUBLISH_SCRIPT, "publish",
                                       self.staging(server)], stdin=True),
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                text=True, bufsize=1)
        self._forward_sockets()
        self._start_meters()

    def _run_dir_on(self, server: str) -> str:
        """The staging directory's parent, relative to STAGING_ROOT (removed when empty)."""
        return self.staging(server)[len(STAGING_ROOT) + 1:].rsplit("/", 1)[0]

    def _mkdirs_script(self, server: str) -> str:
        """The staging directory readable as the run directory here is (tcpdump writes there
        as its own user), the control socket directory private as it is here."""
        script = f"umask 022 && mkdir -p {shlex.quote(self.staging(server) + '/pcaps')}"
        if self.control_dir:
            script += f" && umask 077 && mkdir -p {shlex.quote(self.control_dir)}"
        return script

    def _forward_sockets(self) -> None:
        if not self.control_dir:
            return
        wanted = []
        for server in self.remote:
            hosts = [h.name for h in self.servers.topo.hosts
                     if self.servers.server_of(h.name) == server]
            if not hosts:
                continue
            forwards = []
            for host in hosts:
                path = f"{self.control_dir}/{host}.sock"
                forwards += ["-L", f"{path}:{path}"]
                wanted.append(Path(path))
            self._forwards.append(subprocess.Popen(
                ssh.ssh_base() + ["-N", "-n", "-o", "ExitOnForwardFailure=yes",
                                  "-o", "StreamLocalBindUnlink=yes", *forwards, server],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                text=True))
        deadline = time.monotonic() + FORWARD_READY_S
        while not all(p.exists() for p in wanted):
            for proc in self._forwards:
                if proc.poll() is not None:
                    raise RunServersError(f"forwarding the endpoints' control sockets failed "
                                          f"(ssh exit {proc.returncode}): "
                                          f"{proc.stderr.read().strip()[-300:]}")
            if time.monotonic() > deadline:
                missing = [str(p) for p in wanted if not p.exists()]
                raise RunServersError(f"the control socket forwards did not listen within "
                                      f"{FORWARD_READY_S:g} s: {', '.join(missing)}")
            time.sleep(0.05)

    # ------------------------------------------------------------ while the run goes on

    def follow(self, host: str) -> None:
        """Follow a remote host's worker event log into the run directory here (`tail -F`
        there, each line on this machine's clock by the start alignment)."""
        if not self.is_remote(host):
            return
        server = self.server_of_host(host)
        offset = self.start[server].offset_ns
        out = open(self.tdir / f"worker-{host}.jsonl", "a", buffering=1)
        self._open.append(out)
        self._streams.append(_RemoteLines(
            server, ["tail", "-n", "+1", "-F", f"{self.staging(server)}/worker-{host}.jsonl"],
            lambda line: out.write(retime.shift_event_line(
                line, lambda t: round(t - offset))), f"follow-{host}"))

    def _start_meters(self) -> None:
        """Each other server's CPU and scheduler meter (emulation/cluster/server_meter.py),
        streaming here."""
        for server in self.remote:
            samples = self.cpu_samples.setdefault(server, [])
            sched = self.sched_samples.setdefault(server, [])

            def keep(line, samples=samples, sched=sched, server=server):
                try:
                    samples.append(server_meter.parse_line(line))
                    reading = server_meter.parse_sched(line)
                except server_meter.MeterLineError as exc:
                    self.errors.append(f"{server}: CPU meter: {exc}")
                    return
                if reading is not None:
                    sched.append(reading)
            self._streams.append(_RemoteLines(
                server, ["env", "-C", str(preflight.REPO), str(preflight.REPO / ".venv/bin/python"),
                         "-m", "emulation.cluster.server_meter", "--marker",
                         f"{self.staging(server)}/worker.json"], keep, f"meter-{server}"))

    def publish(self, path: Path) -> None:
        """A one-line file the runner wrote into the run directory, written into every staging
        directory (the stop file: every rank reads it), each acknowledged within
        PUBLISH_TIMEOUT_S; RunServersError naming the server otherwise."""
        if not self._publishers:
            return
        name, body = Path(path).name, Path(path).read_text().strip()
        if "\n" in body or "/" in name:
            raise RunServersError(f"{path}: only a one-line file can be published")
        for server, proc in self._publishers.items():
            try:
                proc.stdin.write(f"{name}\n{body}\n")
                proc.stdin.flush()
                ready, _, _ = select.select([proc.stdout], [], [], PUBLISH_TIMEOUT_S)
                answer = proc.stdout.readline().strip() if ready else ""
            except OSError as exc:
                answer = f"({exc})"
            if answer != f"ok {name}":
                raise RunServersError(f"{server}: publishing {name} failed: "
                                      f"{answer or f'no answer within {PUBLISH_TIMEOUT_S:g} s'}")

    # ------------------------------------------------------------ after the workers

    def collect(self) -> None:
        """Stop following, measure the clocks again, fetch every staging directory back onto
        this machine's clock and remove it there. A server that fails is recorded in `errors`
        and the others are still fetched: what was collected is never lost."""
        self._stop_followers()
        failures = (RunServersError, ClockError, OSError, ValueError, tarfile.TarError,
                    subprocess.SubprocessError)
        for server in self.remote:
            if server not in self.start:      # prepare() stopped before anything ran there
                continue
            # each step on its own: without an end measurement the start's offset is held,
            # and a failed fetch still leaves the server's stall lines and the others' files
            for step in (self._measure_end, self._fetch, self._fetch_ovs_stalls):
                try:
                    step(server)
                except failures as exc:
                    kept = (f"; its files stay in {self.staging(server)} there"
                            if step == self._fetch else "")
                    self.errors.append(f"{server}: {exc}{kept}")
        self.stop()
        if self.clustered:        # the fidelity monitor's evidence (analysis/fidelity.py)
            (self.tdir / CLOCKS_FILE).write_text(json.dumps(self.clocks(), indent=1))
        for server in self._fetched:          # a staging directory not fetched stays there
            staging = shlex.quote(self.staging(server))
            try:
                self._run(server, ["sh", "-c", f"rm -rf {staging} && cd {STAGING_ROOT} && "
                                   "rmdir -p --ignore-fail-on-non-empty "
                                   f"{shlex.quote(self._run_dir_on(server))} 2>/dev/null; true"],
                          "removing the staging directory")
            except RunServersError as exc:
                self.errors.append(f"{server}: {exc}")

    def _measure_end(self, server: str) -> None:
        self.end[server] = self._measure(server)

    def _fetch(self, server: str) -> None:
        argv = self.servers.commands.argv_on(server, [
            "tar", "-C", self.staging(server), "-cf", "-", "--exclude", "./worker.json",
            "--exclude", f"./{traffic_end.STOP_FILE}", "."])
        done = subprocess.run(argv, capture_output=True, timeout=FETCH_TIMEOUT_S)
        if done.returncode != 0:
            raise RunServersError(f"fetching {self.staging(server)} failed (exit "
                                  f"{done.returncode}): "
                                  f"{done.stderr.decode(errors='replace').strip()[-300:]}")
        align = self.alignment(server)
        shift = self._wall_shift(server)
        with tarfile.open(fileobj=io.BytesIO(done.stdout)) as tar:
            for member in tar.getmembers():
                name = Path(member.name)
                if not member.isfile() or name.is_absolute() or ".." in name.parts:
                    continue
                data = tar.extractfile(member).read()
                if name.suffix == ".jsonl":
                    data = retime.shift_event_log(data.decode(), align.to_reference_ns)
                    data = data.encode()
                elif name.suffix == ".pcap" and data:
                    data = retime.shift_pcap(data, shift)
                target = self.tdir / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
        self._fetched.append(server)

    def _wall_shift(self, server: str) -> int:
        return retime.wall_shift_ns(self.wall_minus_mono[server], self._here_wall_minus_mono(),
                                         self.alignment(server).offset_at(time.monotonic_ns()))

    def _here_wall_minus_mono(self) -> int:
        """This machine's wall clock minus its monotonic one as the run directory's clock.json
        records it: the analysis maps every capture stamp to the monotonic clock by that value
        (analysis/pcap.py), so a server's stamps moved onto this wall clock by the same value
        land where its logs do, even if the wall clock was stepped since. A fresh reading when
        clock.json is missing or not the runner's."""
        try:
            data = json.loads((self.tdir / "clock.json").read_text())
            wall, mono = data["realtime_ns"], data["monotonic_ns"]
            if all(isinstance(v, int) and not isinstance(v, bool) for v in (wall, mono)):
                return wall - mono
        except (OSError, ValueError, KeyError, TypeError):
            pass
        return _wall_minus_mono_now()

    def _fetch_ovs_stalls(self, server: str) -> None:
        """The server's ovs-vswitchd stall lines, stamped on this machine's wall clock, where
        the fidelity monitor's OVS check reads them (analysis/fidelity.py)."""
        lines = self._run(server, ["sh", "-c", f"grep -a 'Unreasonably long' {OVS_LOG} || true"],
                          "reading ovs-vswitchd's log")
        (self.tdir / other_ovs_log(_safe(server))).write_text(
            retime.shift_iso_stamps(lines, self._wall_shift(server)))

    def alignment(self, server: str) -> Alignment:
        start = self.start[server]
        end = self.end.get(server) or start
        if end.at_ns <= start.at_ns:         # no end measurement: the start's, held
            end = Estimate(start.offset_ns, start.error_ns, start.at_ns + 1, start.exchanges)
        return Alignment(start, end)

    def clocks(self) -> dict:
        """{server: its alignment as recorded} of every other server whose clock was measured
        (CLOCKS_FILE in the transport's directory, the summary's `cluster.clocks`)."""
        return {server: self.alignment(server).to_dict()
                for server in self.remote if server in self.start}

    def record(self, start_ns: int | None = None, end_ns: int | None = None) -> dict | None:
        """What the summary keeps: the placement's servers, each host's server, each other
        server's clock alignment (model/clockalign.py), its CPU and its scheduling profile
        over [start_ns, end_ns] (this machine's clock, wall time; analysis/cpu_usage.py,
        analysis/sched_profile.py), and what failed; None on one server."""
        if not self.clustered:
            return None
        measured = [server for server in self.remote if server in self.start]
        cpu = {server: self._cpu_usage(server, self.alignment(server), start_ns, end_ns)
               for server in measured}
        sched = {server: self._sched_profile(server, start_ns, end_ns) for server in measured}
        return {"servers": list(self.servers.servers), "clocks": self.clocks(), "cpu": cpu,
                "sched_profile": sched,
                "hosts": {h.name: self.servers.server_of(h.name)
                          for h in self.servers.topo.hosts},
                "errors": list(self.errors)}

    def _cpu_usage(self, server: str, align: Alignment, start_ns, end_ns) -> dict | None:
        readings = self.cpu_samples.get(server) or []
        if start_ns is None or end_ns is None or len(readings) < 2:
            return None
        samples = [dataclasses.replace(s, t_ns=align.to_reference_ns(s.t_ns))
                   for s, _, _ in readings]
        _, hz, ncpu = readings[-1]
        try:
            return usage_in_window(samples, start_ns, end_ns, hz=hz, ncpu=ncpu)
        except ValueError as exc:
            self.errors.append(f"{server}: CPU over the timed window: {exc}")
            return None

    def _sched_profile(self, server: str, start_ns, end_ns) -> dict | None:
        """The server's scheduling profile over [start_ns, end_ns], its samples moved onto
        this machine's clock (None without a window or two samples)."""
        if start_ns is None or end_ns is None:
            return None
        align = self.alignment(server)
        return profile_in_window([dataclasses.replace(s, t_ns=align.to_reference_ns(s.t_ns))
                                  for s in self.sched_samples.get(server) or []],
                                 start_ns, end_ns)

    def stop(self) -> None:
        """Stop the followers, the publishers and the forwards (also when the run failed)."""
        self._stop_followers()
        for proc in self._publishers.values():
            try:
                proc.stdin.close()                # its loop there ends with its input
            except OSError:
                pass
        for proc in self._forwards:
            if proc.poll() is None:
                proc.terminate()
        for proc in [*self._publishers.values(), *self._forwards]:
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._publishers, self._forwards = {}, []

    def _stop_followers(self) -> None:
        """Stop the log followers and the CPU meters, close the followed files."""
        for stream in self._streams:
            stream.stop()
        self._streams = []
        for out in self._open:
            out.close()
        self._open = []

    def _measure(self, server: str) -> Estimate:
        try:
            return server_clock.measure(server)
        except (ClockError, OSError) as exc:
            raise RunServersError(f"{server}: measuring its clock: {exc}") from None

    def _run(self, server: str, argv: list[str], what: str) -> str:
        try:
            return self.servers.commands.run(server, argv, what)
        except Exception as exc:  # noqa: BLE001 - the fabric's error type, named with the step
            raise RunServersError(str(exc)) from None


def _safe(server: str) -> str:
    """A server's name as a file name: [user@]host with every other character as _."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", server)


def _wall_minus_mono_now() -> int:
    m = time.monotonic_ns()
    w = time.time_ns()
    return w - m - (time.monotonic_ns() - m) // 2


class _RemoteLines:
    """A command on a server over ssh as root, tied to the connection (model/ssh.py), each
    complete line of its output handed to on_line(line) in a thread of its own."""

    def __init__(self, server: str, argv: list[str], on_line, name: str):
        self.on_line = on_line
        self.proc = subprocess.Popen(
            ssh.root_argv(server, ssh.tied_to_connection(argv), stdin=True),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.thread = threading.Thread(target=self._read, daemon=True, name=name)
        self.thread.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            if line.endswith("\n"):
                self.on_line(line)

    def stop(self) -> None:
        try:
            self.proc.stdin.close()           # the tied command there stops (model/ssh.py)
        except OSError:
            pass
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.thread.join(5)
