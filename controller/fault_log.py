"""The controller's fault log: every fault, flap step, port-status change and reconvergence,
in memory (GET /faults) and appended to a JSONL file as it happens (the runner reads it)."""
from __future__ import annotations

import json
import threading
import time


class FaultLog:
    def __init__(self, path: str | None):
        self.path = path
        self._lock = threading.Lock()
        self._entries: list[dict] = []

    def append(self, entry: dict) -> dict:
        """Stamp `entry` with t_ns (CLOCK_MONOTONIC, as the endpoints' logs) and record it."""
        entry = {"t_ns": time.monotonic_ns(), **entry}
        with self._lock:
            self._entries.append(entry)
            if self.path:
                with open(self.path, "a") as f:
                    f.write(json.dumps(entry, sort_keys=True) + "\n")
                    f.flush()
        return entry

    def entries(self) -> list[dict]:
        with self._lock:
            return list(self._entries)
