"""The earliest deadline over many timer owners (the endpoint's QPs), recomputed only for the
owners whose state changed (pure: time is passed in).

An endpoint loop turn needs two things from its QPs: when the next one is due (how long poll()
may sleep) and which ones are due now. Asking every QP on every turn would cost each idle QP its
whole deadline computation (RTO heap, EV probes, loss verdicts, reverse probes, delayed SACK)
twice per turn, and a collective opens QPs to every peer while a ring uses two of them. Here an
owner's deadline is computed once after each change (`changed`: a packet for it, a post, a poll,
a port or denylist change) and kept in a heap; an owner nothing happened to costs nothing per turn.

What makes a kept deadline safe: an owner's deadline(now) may depend on `now` only by being at
most `now` ("due now") or by dropping out as time passes (the receiver stops probing reverse
paths once data stops), never by moving earlier without a change of state. So a deadline
computed at the last change is never later than the one a fresh computation would give: the
owner is served on time, at worst polled once for nothing.
"""
from __future__ import annotations

import heapq
import itertools
from typing import Callable, Hashable


class DeadlineQueue:
    """Owners (hashable, e.g. QueuePair objects) and their deadlines.

    `deadline_of(owner, now_ns)` -> int ns, or None for "nothing to do until something changes".
    """

    # Superseded heap entries are dropped lazily; past this many per live deadline (plus a
    # constant) the heap is rebuilt, so busy owners re-arming every turn cannot grow it.
    _STALE_FACTOR = 4

    def __init__(self, deadline_of: Callable[[Hashable, int], int | None]):
        self._deadline_of = deadline_of
        self._heap: list[tuple[int, int, Hashable]] = []    # (deadline, tiebreak, owner)
        self._live: dict[Hashable, int] = {}      # owner -> deadline of its live heap entry
        self._changed: dict[Hashable, None] = {}  # owners to recompute (insertion ordered)
        # owner -> when its live deadline became due as far as the loop could know: the
        # deadline, or the computation that found it already past. A change of state can put
        # an owner's deadline in the past (a QP whose port comes back still holds the EV probe
        # it scheduled before the port went down); the loop learns of it only at that change,
        # so the time before it is not a late turn, and counting it would void a run that kept up.
        self._known: dict[Hashable, int] = {}
        self._tiebreak = itertools.count()
        # Optional recorder of how late each due owner is served (record(ns)): the endpoint's
        # timer lateness, its fidelity evidence (analysis/fidelity.py), counted from when the
        # deadline was known (_known).
        self.lateness = None

    def changed(self, owner: Hashable) -> None:
        """Something happened to `owner`: recompute its deadline before the next question."""
        self._changed[owner] = None

    def refresh(self, now_ns: int) -> None:
        """Recompute the deadlines of the owners that changed."""
        if not self._changed:
            return
        changed, self._changed = self._changed, {}
        live = self._live
        for owner in changed:
            d = self._deadline_of(owner, now_ns)
            if d == live.get(owner):
                continue                    # the live entry already says so
            if d is None:
                del live[owner]
                self._known.pop(owner, None)
                continue
            live[owner] = d
            self._known[owner] = d if d >= now_ns else now_ns
            heapq.heappush(self._heap, (d, next(self._tiebreak), owner))
        if len(self._heap) > self._STALE_FACTOR * len(live) + 64:
            self._heap = [(d, next(self._tiebreak), o) for o, d in live.items()]
            heapq.heapify(self._heap)

    def _drop_stale(self) -> None:
        heap, live = self._heap, self._live
        while heap and live.get(heap[0][2]) != heap[0][0]:
            heapq.heappop(heap)

    def earliest(self, now_ns: int) -> int | None:
        """The earliest deadline of any owner (None: none has one)."""
        self.refresh(now_ns)
        self._drop_stale()
        return self._heap[0][0] if self._heap else None

    def pop_due(self, now_ns: int) -> list:
        """The owners due at now_ns, earliest first, each once. They count as changed (the
        caller is about to poll them), so their next deadline is computed afresh. With a
        `lateness` recorder, each due owner's lateness is recorded: now_ns less the later of
        its deadline and the computation that found it."""
        self.refresh(now_ns)
        heap, live = self._heap, self._live
        lateness = self.lateness
        due = []
        while heap and heap[0][0] <= now_ns:
            d, _, owner = heapq.heappop(heap)
            if live.get(owner) != d:
                continue                    # superseded by a later computation
            del live[owner]
            known = self._known.pop(owner, d)
            due.append(owner)
            self._changed[owner] = None
            if lateness is not None:
                lateness.record(now_ns - known)
        return due

    def changed_since_kept(self, owner: Hashable) -> bool:
        """`owner` changed (or was served) and its deadline is not recomputed yet."""
        return owner in self._changed

    def kept(self, owner: Hashable) -> int | None:
        """The deadline kept for `owner` at its last computation (None: it had none)."""
        return self._live.get(owner)

    def __len__(self) -> int:
        """Owners with a deadline (changed ones not yet recomputed aside)."""
        return len(self._live)
