"""The kernel's link announcements (traffic/nic/link_events.py) read by a real endpoint in a
network namespace of its own: a port's carrier lost and back is seen at once, although its
backstop poll would not come for 100 s."""
import json
import shutil
import subprocess
import sys

import pytest

from model.events import Event
from tests.helpers.paths import REPO
from traffic.nic.link_events import LinkEvents

# Run in a user and network namespace of its own (unshare -rn): a veth whose far end goes down
# and up, the endpoint's port on the near end.
SCRIPT = """
import json, subprocess, sys, time
from traffic.nic.endpoint import Endpoint
from traffic.nic.endpoint_support import EndpointConfig
ip = lambda *a: subprocess.run(["ip", *a], check=True)
ip("link", "add", "h0-p0", "type", "veth", "peer", "name", "peer0")
for name in ("h0-p0", "peer0", "lo"):
    ip("link", "set", name, "up")
ep = Endpoint(EndpointConfig(host=0, planes=[0], event_log=sys.argv[1], port_poll_ms=100000.0,
                             port_poll_backstop_ms=100000.0))

def turns_until(up):
    start = time.monotonic()
    while ep.port_up[0] != up and time.monotonic() - start < 5:
        ep.run_once(0.05)
    return ep.port_up[0] == up

seen = {"first_up": turns_until(True)}
ip("link", "set", "peer0", "down")
seen["down"] = turns_until(False)
ip("link", "set", "peer0", "up")
seen["up_again"] = turns_until(True)
ep.close()
print(json.dumps(seen))
"""


def test_a_port_that_loses_its_carrier_and_gets_it_back_is_seen_at_once(tmp_path):
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        pytest.skip("unshare (util-linux) or ip (iproute2) is not installed")
    log = tmp_path / "endpoint.jsonl"
    done = subprocess.run(["unshare", "-rn", sys.executable, "-c", SCRIPT, str(log)],
                          capture_output=True, text=True, timeout=120, cwd=REPO)
    if done.returncode != 0 and "unshare failed" in done.stderr:
        pytest.skip(f"no user namespaces here: {done.stderr.strip()[-200:]}")
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.splitlines()[-1]) == {"first_up": True, "down": True,
                                                         "up_again": True}
    events = [json.loads(line) for line in log.read_text().splitlines()]
    assert [e["up"] for e in events if e["event"] == Event.PORT] == [False, True]


def test_nothing_announced_is_nothing_to_read():
    events = LinkEvents.open()
    assert isinstance(events, LinkEvents)
    try:
        assert events.fileno() >= 0 and events.drain() is False
    finally:
        events.close()
