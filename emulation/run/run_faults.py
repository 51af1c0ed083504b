"""The run's fault schedule: each [[faults]] entry POSTed to the controller when it is due
(at_s, at_iteration or after_s, timed by the workers' logs), every answer recorded in
faults-applied.jsonl, a "reached": false record for each entry never sent, saying why, and,
with `[collective] iterations_after_faults`, the end of the traffic named once the last entry
is applied (model/traffic_end.py)."""
from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from controller.client import ControllerClient, ControllerError
from emulation.run.run_progress import LogTail
from emulation.config.scenario import Scenario
from model import faults as fault_kinds
from model import traffic_end

POLL_S = 0.01
# why an entry was never sent, when the traffic stopped before it came due
NEVER_STARTED = "the timed iterations never started"
TRAFFIC_ENDED = "the traffic ended before it was due"
BATCH_MAX = 256          # commands per POST /faults: a few hundred bytes each, far below its body bound


def post_faults(client: ControllerClient, commands: list[dict]) -> dict:
    """POST /fault for one command, POST /faults for several: the controller's answer,
    {"ok": False, "error"} when it refuses or fails them; raises ControllerError when it
    cannot be reached (the scheduler then stops)."""
    try:
        if len(commands) == 1:
            return client.fault(commands[0])
        return client.fault_batch(commands)
    except ControllerError as exc:
        if exc.status is None:
            raise
        return {"ok": False, "error": exc.detail}


def batches(due: list) -> list[list[tuple[int, object, dict]]]:
    """The commands of the entries due at one instant, in order, as runs to send: consecutive
    nftables faults (fault_kinds.FaultKind.nft_applied) together, up to BATCH_MAX, every
    other command alone (a link-down goes out the moment it is due)."""
    runs: list[list] = []
    for index, entry in due:
        for command in entry.commands:
            item = (index, entry, command)
            batchable = fault_kinds.kind(command["action"]).nft_applied
            last = runs[-1] if runs else None
            if (batchable and last and len(last) < BATCH_MAX
                    and fault_kinds.kind(last[-1][2]["action"]).nft_applied):
                last.append(item)
            else:
                runs.append([item])
    return runs


class FaultScheduler(threading.Thread):
    """Applies the scenario's fault schedule at the right times; records every answer."""

    def __init__(self, scn: Scenario, tail: LogTail, api_port: int, applied_path: Path,
                 publish=None):
        """publish(path): copies the stop file where ranks of other servers read it (None:
        every rank reads the run directory here)."""
        super().__init__(daemon=True, name="fault-scheduler")
        self.publish = publish
        self.pending = list(enumerate(scn.faults))
        self.tail = tail
        self.api_port = api_port
        self.client = ControllerClient(port=api_port, timeout_s=10.0)
        self.applied_path = applied_path
        self.applied: list[dict] = []
        self.applied_at: dict[int, int] = {}      # entry index -> when it was applied (ns)
        self.sent: set[int] = set()               # entries whose commands were (being) sent
        self.current: list[int] = []              # entries being sent right now
        self.stop_event = threading.Event()
        self.error: str | None = None
        self.after = scn.collective.iterations_after_faults
        self.iterations = scn.collective.iterations
        self.run_dir = applied_path.parent
        self.ends_at: int | None = None           # the timed iterations named, once named

    def due(self, index: int, entry) -> bool:
        start = self.tail.timed_start_ns
        if start is None:
            return False
        if entry.after_s is not None:
            previous = self.applied_at.get(index - 1)
            return previous is not None and time.monotonic_ns() >= previous + entry.after_s * 1e9
        if entry.at_s is not None:
            return time.monotonic_ns() >= start + entry.at_s * 1e9
        return entry.at_iteration == 0 or self.tail.max_done() >= entry.at_iteration

    def run(self) -> None:
        try:
            with open(self.applied_path, "a", buffering=1) as out:
                while self.pending and not self.stop_event.is_set():
                    self.tail.poll()
                    due = [x for x in self.pending if self.due(*x)]
                    for item in due:
                        self.pending.remove(item)
                    for run in batches(due):
                        self._send(run, out)
                    self.stop_event.wait(POLL_S)
            if not self.pending and self.after is not None and not self.stop_event.is_set():
                self._end_traffic()
        except Exception as exc:  # noqa: BLE001 - reported in the summary, never kills the run
            self.error = f"fault scheduler failed: {exc!r}"
            answered = {a["entry"] for a in self.applied}
            for index in self.current:
                if index not in answered:
                    self.sent.discard(index)        # died before any answer: never sent

    def _send(self, run: list[tuple[int, object, dict]], out) -> None:
        """POST one command, or a batch of nftables faults due at one instant as one POST
        /faults (one transaction per namespace: the machine spawns a process per namespace,
        not per port, at the instant a recovery window opens); one record per command."""
        for index, _, _ in run:
            self.sent.add(index)
        self.current = [index for index, _, _ in run]
        asked = time.monotonic_ns()
        commands = [command for _, _, command in run]
        answer = post_faults(self.client, commands)
        for index, entry, command in run:
            record = {"entry": index, "when": entry.when(), "asked_ns": asked,
                      "t_ns": answer.get("t_ns", asked), "ok": bool(answer.get("ok")),
                      "command": command}
            if len(run) > 1:
                record["batch"] = len(run)
            if not record["ok"]:
                record["error"] = answer.get("error", "no answer")
            self.applied.append(record)
            out.write(json.dumps(record) + "\n")
        done = time.monotonic_ns()
        for index, _, _ in run:
            self.applied_at[index] = done
        self.current = []

    def _end_traffic(self) -> None:
        """Every entry is applied: name the timed iteration at which every rank stops."""
        self.tail.poll()
        self.ends_at = traffic_end.stop_iteration(self.tail.max_done(), self.after,
                                                  self.iterations)
        path = traffic_end.write(self.run_dir, self.ends_at,
                                 f"{self.after} iterations after the last fault entry was applied")
        if self.publish is not None:
            self.publish(path)

    def planned_iterations(self) -> int:
        """How many timed iterations the ranks run: the named end, or the scenario's count."""
        return self.iterations if self.ends_at is None else self.ends_at

    def stop(self) -> None:
        self.stop_event.set()
        self.join(15)


@dataclass
class RunProgress:
    """How far the run got when the workers finished, for saying why an entry was never sent:
    wall-clock monotonic ns, and the time scale that turns them into the emulated world's."""
    timed_start_ns: int | None
    stopped_ns: int
    applied_at: dict[int, int] = field(default_factory=dict)   # entry index -> applied (ns)
    done: int = 0                       # the most timed iterations any rank completed
    k: float = 1.0

    def seconds(self, ns: int) -> float:
        """Emulated seconds since the timed start at wall-clock time `ns`."""
        return (ns - self.timed_start_ns) / 1e9 / self.k


def unreached_records(scn: Scenario, sent: set[int], reason_of) -> list[dict]:
    """faults-applied.jsonl records for the schedule entries that were never sent, so the run
    directory itself says which faults did not take effect and why (reason_of(index))."""
    out = []
    for index, entry in enumerate(scn.faults):
        if index in sent:
            continue
        first = entry.commands[0] if entry.commands else {}
        out.append({"entry": index, "when": entry.when(), "reached": False, "ok": False,
                    "action": first.get("action"), "a": first.get("a"), "b": first.get("b"),
                    "commands": len(entry.commands), "reason": reason_of(index)})
    return out


def unreached_reason(state: dict, scheduler_error: str | None, progress: RunProgress,
                     scn: Scenario, index: int) -> str:
    """Why entry `index`, still pending when the workers finished, was never sent. Times are
    the emulated world's (the file's), counted from the start of the timed iterations."""
    if scheduler_error:
        return f"the fault scheduler died before it was due ({scheduler_error})"
    if state.get("error"):
        return f"the run stopped before it was due ({state['error']})"
    if progress.timed_start_ns is None:
        return NEVER_STARTED
    entry, k = scn.faults[index], progress.k
    unit = " of emulated time" if k != 1 else ""
    ended = f"the traffic ended {progress.seconds(progress.stopped_ns):.2f} s{unit} after the " \
            f"timed iterations started"
    if entry.at_iteration is not None:
        return (f"{TRAFFIC_ENDED}: it was due when a rank started timed "
                f"iteration {entry.at_iteration}, and no rank got past {progress.done}")
    if entry.at_s is not None:
        return (f"{TRAFFIC_ENDED}: it was due {entry.at_s / k:g} s{unit} "
                f"after the timed iterations started, and {ended}")
    previous = scn.faults[index - 1].when()
    if index - 1 not in progress.applied_at:
        return (f"it was due {entry.after_s / k:g} s after the previous entry ({previous}), "
                f"which was never applied")
    applied = progress.seconds(progress.applied_at[index - 1])
    return (f"{TRAFFIC_ENDED}: it was due {entry.after_s / k:g} s after the "
            f"previous entry ({previous}), which was applied {applied:.2f} s after the timed "
            f"iterations started, so at {applied + entry.after_s / k:.2f} s, and {ended}")
