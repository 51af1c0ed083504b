"""One endpoint process (traffic/nic/endpoint.py) in a host of a running Fabric, driven over its
control socket (traffic/nic/control.py): configured, started, waited for until it answers, stopped.
The fabric benches and the endpoint integration tests drive endpoints this way; the runner
starts workers instead, which start their own.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from emulation.network.fabric import REPO_ROOT
from traffic.nic.control import ControlClient


class EndpointStartError(RuntimeError):
    """The endpoint exited or did not answer in time; the message holds its stderr."""


class EndpointProcess:
    """Files in `workdir`: ep-h<n>.json (config), ep-h<n>.jsonl (event log), ep-h<n>.sock
    (control socket), ep-h<n>.stderr (its output). `config` overrides EndpointConfig keys;
    `env` adds environment variables (e.g. MRCLAB_PURE_PYTHON=1 for the interpreted core)."""

    def __init__(self, fab, host: int, workdir, config: dict | None = None, *,
                 routing: str = "srv6", start_timeout_s: float = 20.0,
                 call_timeout_s: float = 120.0, env: dict | None = None):
        workdir = Path(workdir)
        self.host = host
        self.socket = workdir / f"ep-h{host}.sock"
        self.log = workdir / f"ep-h{host}.jsonl"
        self.output = workdir / f"ep-h{host}.stderr"
        cfg = {"host": host, "fabric": fab.topo.spec.to_dict(), "routing": routing,
               "event_log": str(self.log), "control_socket": str(self.socket),
               "seed": 100 + host, **(config or {})}
        cfg_path = workdir / f"ep-h{host}.json"
        cfg_path.write_text(json.dumps(cfg))
        with open(self.output, "w") as out:
            self.proc = fab.popen_in_host(host, [sys.executable, "-m", "traffic.nic.endpoint_cli",
                                                 "--config", str(cfg_path)],
                                          role="endpoints", cwd=REPO_ROOT,
                                          env={**os.environ, **(env or {})},
                                          stdout=out, stderr=out)
        try:
            self.client = self._connect(start_timeout_s, call_timeout_s)
        except EndpointStartError:
            self.proc.kill()
            self.proc.wait()
            raise

    def _connect(self, start_timeout_s: float, call_timeout_s: float) -> ControlClient:
        """The first connection that succeeds: the socket file appears just before the
        endpoint listens on it, so a refused connect means "not yet"."""
        deadline = time.monotonic() + start_timeout_s
        while True:
            if self.proc.poll() is not None:
                raise EndpointStartError(f"endpoint h{self.host} exited with "
                                         f"{self.proc.returncode}: "
                                         f"{self.output.read_text()[-2000:]}")
            if self.socket.exists():
                try:
                    return ControlClient(str(self.socket), timeout_s=call_timeout_s)
                except (ConnectionRefusedError, FileNotFoundError):
                    pass
            if time.monotonic() > deadline:
                raise EndpointStartError(f"endpoint h{self.host} did not answer on {self.socket} "
                                         f"within {start_timeout_s:g} s: "
                                         f"{self.output.read_text()[-2000:]}")
            time.sleep(0.05)

    def stop(self) -> dict | None:
        """Ask the endpoint to shut down and wait for it (killed after 10 s); returns its last
        `status` reply, None when it no longer answered."""
        status = None
        try:
            status = self.client.call("status")
            self.client.call("shutdown")
        except Exception:  # noqa: BLE001 - an endpoint that does not answer is stopped anyway
            pass
        self.client.close()
        self._end_process()
        return status

    def _end_process(self) -> None:
        try:
            self.proc.wait(timeout=10)
        except Exception:  # noqa: BLE001 - whatever went wrong, it must not outlive the run
            self.proc.kill()
            self.proc.wait()
