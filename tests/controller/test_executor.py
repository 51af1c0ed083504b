"""The executor runs real commands with their exit status checked, and sends flow mods through
the OpenFlow handle (here a recording stand-in for the os-ken adapter, which needs switches)."""
import threading
import time

import pytest

from controller.api import CommandError
from controller.commands import CancelFlap, DeleteCookie, InstallRules, RunArgv, StartFlap
from controller.executor import Executor, run_checked
from controller.routing import FlowRule
from controller.scheduler import Scheduler


class SwitchHandle:
    def __init__(self):
        self.sent = []

    def install(self, switch, rules):
        self.sent.append(("install", switch, rules))

    def delete_cookie(self, switch, cookie):
        self.sent.append(("delete", switch, cookie))


def test_failing_command_raises_with_its_stderr():
    assert run_checked(["sh", "-c", "echo out"]) == "out\n"
    with pytest.raises(CommandError, match=r"failed \(exit 3\): .*: boom"):
        run_checked(["sh", "-c", "echo boom >&2; exit 3"])
    with pytest.raises(CommandError, match="command not found|could not run"):
        run_checked(["/nonexistent/mrclab-tool"])


def test_commands_run_in_order_and_stop_at_the_first_failure(tmp_path):
    flaps = []
    handle = SwitchHandle()
    ex = Executor(run_checked, lambda: handle, flaps.append, flaps.append)
    rule = FlowRule(0, 1, {}, (), 7)
    marker = tmp_path / "ran"
    with pytest.raises(CommandError):
        ex.execute([CancelFlap("a", "b"), InstallRules("s", (rule,)), DeleteCookie("s", 7),
                    RunArgv(("false",)), RunArgv(("touch", str(marker)))])
    assert flaps == [CancelFlap("a", "b")]
    assert handle.sent == [("install", "s", [rule]), ("delete", "s", 7)]
    assert not marker.exists()
    ex.execute([StartFlap("a", "b", 1.0, 1)])
    assert flaps[-1] == StartFlap("a", "b", 1.0, 1)


def test_flow_mods_without_openflow_side_time_out():
    ex = Executor(run_checked, lambda: None, print, print)
    with pytest.raises(TimeoutError, match="OpenFlow side not running"):
        ex.execute([DeleteCookie("s", 1)])


def test_scheduler_sequence_runs_in_order_and_cancel_stops_it():
    sched = Scheduler()
    seen, done = [], threading.Event()

    def step(value, cancelled):
        seen.append(value)
        if value == "last":
            done.set()

    sched.start_sequence("k", [(0.0, "first"), (0.05, "last")], step, seen.append)
    assert done.wait(2)
    assert seen == ["first", "last"]
    sched.start_sequence("k", [(0.1, "cancelled"), (0.2, "cancelled too")], step, seen.append)
    assert "k" in sched.running()
    assert sched.cancel("k") and not sched.cancel("k")
    time.sleep(0.4)
    assert seen == ["first", "last"] and "k" not in sched.running()
