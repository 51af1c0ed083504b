"""Each timed iteration's input and expected result, computed one iteration ahead in a thread.

The exact expected result of an all-reduce sums every rank's input. Computed between
iterations, that numpy work would be serial with the collective: no rank drives its endpoint
meanwhile (no frames read, no ACKs sent), and the ranks start the next iteration apart by as
much as their inputs took, which every ring step then waits for. make_input hashes each rank's
base once and adds a per-iteration offset (traffic/workload/collectives.py), but the first iteration
still hashes every base and a large world or buffer costs more: numpy releases the GIL in its
array loops, so a worker thread computes iteration i+1's arrays while the main thread runs
iteration i, during the endpoint's waits in poll().

Pure: no sockets; the thread only runs the given function.
"""
from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable


class InputPrefetcher:
    """`get(i)` returns compute(i), and starts computing compute(i + 1) (if i + 1 < stop)
    in the background. Iterations are asked for in order; an out-of-order `get` computes
    in the caller's thread. Exceptions of compute() are raised from the `get` that needs it."""

    def __init__(self, compute: Callable[[int], object], start: int, stop: int):
        self.compute = compute
        self.stop = stop
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="iteration-inputs")
        self._ahead: tuple[int, Future] | None = None
        if start < stop:
            self._ahead = (start, self._pool.submit(compute, start))

    def get(self, iteration: int):
        ahead, self._ahead = self._ahead, None
        if ahead is not None and ahead[0] == iteration:
            value = ahead[1].result()
        else:
            if ahead is not None:
                ahead[1].cancel()
            value = self.compute(iteration)
        if iteration + 1 < self.stop:
            self._ahead = (iteration + 1, self._pool.submit(self.compute, iteration + 1))
        return value

    def close(self) -> None:
        if self._ahead is not None:
            self._ahead[1].cancel()
            self._ahead = None
        self._pool.shutdown(wait=True)

    def __enter__(self) -> "InputPrefetcher":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
