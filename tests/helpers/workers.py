"""Worker processes on 127.0.0.1 for the tests that run real workers over TCP: free listen ports,
a world of `python -m traffic.workload.worker` processes started from a config written here, and their
event logs read back."""
import json
import random
import socket
import subprocess
import sys
from pathlib import Path

from tests.helpers.paths import REPO


def free_ports(n):
    """n listen ports that are free now, chosen BELOW the kernel's ephemeral range
    (net.ipv4.ip_local_port_range, 32768+): a port the kernel hands out as ephemeral can be taken
    by another rank's outgoing connect between this probe and the rank's listen()."""
    rng = random.Random()
    ports = []
    while len(ports) < n:
        port = rng.randrange(20000, 32000)
        if port in ports:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        ports.append(port)
    return ports


def start_workers(tmp_path, world, **overrides):
    ports = free_ports(world)
    config = {"transport": "tcp", "world_size": world, "hosts": [f"h{i}" for i in range(world)],
              "collective": "allreduce", "message_bytes": 40_000, "iterations": 5, "warmup": 1,
              "qps_per_peer": 2, "timeout_s": 10, "log_dir": str(tmp_path / "logs"),
              "goodput_interval_ms": 10,
              "tcp": {"endpoints": [[["127.0.0.1", p]] for p in ports], "connect_timeout_s": 10}}
    config.update(overrides)
    path = tmp_path / "worker.json"
    path.write_text(json.dumps(config))
    return [subprocess.Popen([sys.executable, "-m", "traffic.workload.worker", "--config", str(path),
                              "--rank", str(r)], cwd=REPO, stderr=subprocess.PIPE, text=True)
            for r in range(world)]


def events(path):
    return [json.loads(line) for line in Path(path).read_text().splitlines()]
