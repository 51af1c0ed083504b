"""Timers of the controller: one-shot delays (ECMP reconvergence) and cancellable step
sequences (link flaps), each in a daemon thread so a stuck one never blocks the process."""
from __future__ import annotations

import threading
import time
from typing import Callable, Hashable


class Scheduler:
    def __init__(self):
        self._lock = threading.Lock()
        self._sequences: dict[Hashable, threading.Event] = {}

    def after(self, delay_s: float, fn: Callable, *args) -> None:
        timer = threading.Timer(delay_s, fn, args=args)
        timer.daemon = True
        timer.start()

    def start_sequence(self, key: Hashable, steps: list[tuple[float, object]],
                       on_step: Callable[[object, Callable[[], bool]], None],
                       on_error: Callable[[Exception], None], name: str = "sequence") -> None:
        """Call on_step(value, cancelled) at each (offset from now in s, value), until the
        steps run out or cancel(key). A new sequence under the same key replaces the old.
        on_step gets `cancelled` to check again under its own lock before acting."""
        self.cancel(key)
        stop = threading.Event()
        with self._lock:
            self._sequences[key] = stop

        def loop():
            start = time.monotonic()
            try:
                for offset, value in steps:
                    if stop.wait(max(0.0, start + offset - time.monotonic())):
                        return
                    on_step(value, stop.is_set)
            except Exception as err:
                on_error(err)
            finally:
                with self._lock:
                    if self._sequences.get(key) is stop:
                        del self._sequences[key]

        threading.Thread(target=loop, daemon=True, name=name).start()

    def cancel(self, key: Hashable) -> bool:
        with self._lock:
            stop = self._sequences.pop(key, None)
        if stop is None:
            return False
        stop.set()
        return True

    def running(self) -> frozenset:
        """Keys of the sequences still running."""
        with self._lock:
            return frozenset(self._sequences)
