"""Open vSwitch must be running before a fabric is built: start it when it is not.

`make setup` starts ovsdb-server and ovs-vswitchd, but nothing keeps them running: after a reboot
of the VM, or once something stopped them, every fabric command would fail deep in cleanup with
"database connection failed". So the fabric checks both daemons first and starts the missing
one the way scripts/setup.sh does (userspace datapath only, so no kernel module is needed), and
raises, naming the daemon and the command, when that does not bring it up.
"""
from __future__ import annotations

from model.proc import run_checked

OVS_CTL = "/usr/share/openvswitch/scripts/ovs-ctl"
# ovsdb-server answers ovs-vsctl; ovs-vswitchd answers ovs-appctl. Each check is one quick
# command with its own timeout, so a hung daemon cannot hold the fabric's start.
DB_CHECK = ["ovs-vsctl", "--timeout=3", "show"]
SWITCHD_CHECK = ["ovs-appctl", "--timeout=3", "-t", "ovs-vswitchd", "version"]
START_DB = [OVS_CTL, "start", "--no-ovs-vswitchd", "--system-id=random"]
START_SWITCHD = [OVS_CTL, "start", "--no-ovsdb-server", "--no-monitor"]
# Where the daemons write their pids (ovs-ctl's default run directory).
SWITCHD_PID_FILE = "/var/run/openvswitch/ovs-vswitchd.pid"
DB_PID_FILE = "/var/run/openvswitch/ovsdb-server.pid"


class OvsNotRunning(RuntimeError):
    """An Open vSwitch daemon is down and could not be started; the message says which."""


def _answers(argv: list[str], runner) -> bool:
    try:
        runner(argv, timeout=10)
    except Exception:          # any failure to answer means "not running" here
        return False
    return True


def _start(name: str, start: list[str], check: list[str], runner) -> None:
    try:
        runner(start, timeout=60)
    except Exception as err:
        raise OvsNotRunning(f"Open vSwitch's {name} was not running and starting it failed: "
                            f"{err}. Run `make setup` (as root), which installs and starts "
                            f"Open vSwitch.") from None
    if not _answers(check, runner):
        raise OvsNotRunning(f"Open vSwitch's {name} was started ({' '.join(start)}) but does "
                            f"not answer `{' '.join(check)}`; see /var/log/openvswitch/.")


def ensure_ovs_running(runner=None) -> list[str]:
    """Start whichever of ovsdb-server and ovs-vswitchd does not answer; returns the names of
    the daemons started (empty when both were up). `runner(argv, timeout=...)` runs a command
    and raises on failure (model.proc.run_checked by default)."""
    runner = runner or (lambda argv, timeout: run_checked(argv, timeout=timeout))
    started = []
    if not _answers(DB_CHECK, runner):
        _start("ovsdb-server", START_DB, DB_CHECK, runner)
        started.append("ovsdb-server")
    if not _answers(SWITCHD_CHECK, runner):
        _start("ovs-vswitchd", START_SWITCHD, SWITCHD_CHECK, runner)
        started.append("ovs-vswitchd")
    return started
