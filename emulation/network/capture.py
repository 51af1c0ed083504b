"""A packet capture running in a host's namespace (Fabric.capture starts it): stopped with the
interrupt tcpdump takes as "flush and close the pcap", killed only when it does not stop.
"""
from __future__ import annotations

import signal
import subprocess
from pathlib import Path


class Capture:
    """A tcpdump running in a host namespace; stop() flushes and closes the pcap."""

    def __init__(self, proc: subprocess.Popen, path: Path, intf: str):
        self.proc, self.path, self.intf = proc, path, intf

    def stop(self, timeout: float = 5.0) -> Path:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.path

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
