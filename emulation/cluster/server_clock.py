"""A server's monotonic clock against this machine's, measured: NTP-style ping-pong exchanges
(model/clockalign.py does the arithmetic) over one ssh session to the server, at the start and
at the end of a run.

The server runs ANSWER with the project's Python: for each line it reads it prints its clock
when the line arrived (t1) and when it answers (t2). This machine stamps each request as it
sends it (t0) and each answer as it reads it (t3). The round trip includes ssh's own work on
both sides; it only widens the error bound (delay / 2), it cannot bias the estimate beyond it.
The first exchange also pays for the interpreter's start, so it is made and dropped.
"""
from __future__ import annotations

import subprocess
import time

from emulation.cluster import preflight
from model.clockalign import ClockError, Estimate, Exchange, estimate

EXCHANGES = 16                # the minimum-delay one of these is kept
TIMEOUT_S = 30
ANSWER = ("import sys, time\n"
          "for line in sys.stdin:\n"
          "    t1 = time.monotonic_ns()\n"
          "    sys.stdout.write('%d %d\\n' % (t1, time.monotonic_ns()))\n"
          "    sys.stdout.flush()\n")


def exchanges(send, receive, count: int = EXCHANGES, clock=time.monotonic_ns) -> list[Exchange]:
    """`count` exchanges after one dropped warm-up: send(line) writes a request, receive()
    returns the answer's line."""
    out = []
    for i in range(count + 1):
        t0 = clock()
        send("t\n")
        reply = receive()
        t3 = clock()
        try:
            t1, t2 = (int(v) for v in reply.split())
        except ValueError:
            raise ClockError(f"the server's clock answer is not two integers: "
                             f"{reply.strip()[:80]!r}") from None
        if i:
            out.append(Exchange(t0, t1, t2, t3))
    return out


def answer_argv(server: str, repo=preflight.REPO) -> list[str]:
    return preflight.ssh_argv(server, [f"{repo}/.venv/bin/python", "-u", "-c", ANSWER])


def measure(server: str, count: int = EXCHANGES, repo=preflight.REPO) -> Estimate:
    """The server's offset to this machine's clock, with its error bound."""
    proc = subprocess.Popen(answer_argv(server, repo), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)

    def send(line):
        proc.stdin.write(line)
        proc.stdin.flush()

    def receive():
        line = proc.stdout.readline()
        if not line:
            raise ClockError(f"{server} stopped answering the clock exchange: "
                             f"{proc.stderr.read().strip()[-200:]!r}")
        return line

    try:
        return estimate(exchanges(send, receive, count))
    finally:
        proc.stdin.close()
        try:
            proc.wait(TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
