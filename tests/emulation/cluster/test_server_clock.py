"""The clock exchange with a server (emulation/cluster/server_clock.py), against a fake server
whose clock is a known offset ahead, and the server side's own script run for real."""
import subprocess
import sys

import pytest

from emulation.cluster import server_clock as P
from model.clockalign import ClockError, estimate


class FakeServer:
    """This machine's clock ticks 100 us per reading; the server's reads it + `offset` + 40 us
    on receiving and + 60 us on answering, so a round trip lasts 100 us, of which 20 us are
    the server's and 40 us each way."""

    def __init__(self, offset):
        self.now, self.offset, self.sent = 1_000_000, offset, []

    def clock(self):
        self.now += 100_000
        return self.now

    def send(self, line):
        self.sent.append(line)

    def receive(self):
        t1 = self.now + 40_000 + self.offset
        return f"{t1} {t1 + 20_000}\n"


def test_exchanges_against_a_known_offset():
    """Each exchange: t0 = T, t1 = T + 40 us + offset, t2 = t1 + 20 us, t3 = T + 100 us:
    offset estimate ((40 us + offset) + (offset - 40 us)) / 2 = offset, delay 100 - 20 = 80 us,
    bound 40 us. The first of 4 + 1 exchanges is dropped."""
    server = FakeServer(offset=-7_000_000)
    got = P.exchanges(server.send, server.receive, count=4, clock=server.clock)
    assert len(got) == 4 and len(server.sent) == 5
    assert got[0].t0 == 1_000_000 + 3 * 100_000        # the warm-up used two readings
    est = estimate(got)
    assert (est.offset_ns, est.error_ns) == (-7_000_000, 40_000)


def test_a_garbled_answer_is_named():
    with pytest.raises(ClockError, match="not two integers: 'bash: python: not found'"):
        P.exchanges(lambda line: None, lambda: "bash: python: not found\n", count=1)


def test_the_server_side_answers_with_two_clock_readings():
    """ANSWER as the server runs it (here, with this Python): t1 <= t2 for every line."""
    done = subprocess.run([sys.executable, "-u", "-c", P.ANSWER], input="t\nt\n",
                          capture_output=True, text=True, timeout=30)
    pairs = [tuple(int(v) for v in line.split()) for line in done.stdout.splitlines()]
    assert len(pairs) == 2 and all(t1 <= t2 for t1, t2 in pairs)


def test_the_ssh_command_runs_the_project_python():
    argv = P.answer_argv("root@b", "/srv/mrclab")
    assert argv[:-1] == ["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5", "root@b"]
    assert argv[-1].startswith("/srv/mrclab/.venv/bin/python -u -c ")
