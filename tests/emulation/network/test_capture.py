"""A capture's stop (emulation/network/capture.py) on real processes standing for tcpdump: one
that ends on the interrupt, as tcpdump does after flushing, and one that ignores it and is
killed after the timeout."""
import subprocess
import sys
import time

from emulation.network.capture import Capture

# prints "ready" once its handler is set, then exits 7 on SIGINT (or, ignoring it, never)
ENDS_ON_INTERRUPT = ("import signal, sys, time\n"
                     "signal.signal(signal.SIGINT, lambda *a: sys.exit(7))\n"
                     "print('ready', flush=True)\ntime.sleep(60)\n")
IGNORES_INTERRUPT = ("import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                     "print('ready', flush=True)\ntime.sleep(60)\n")


def started(script: str) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    return proc


def test_stop_interrupts_and_waits_for_the_capture_to_close(tmp_path):
    proc = started(ENDS_ON_INTERRUPT)
    with Capture(proc, tmp_path / "h0-p0.pcap", "h0-p0") as cap:
        assert cap.stop() == tmp_path / "h0-p0.pcap"
        assert proc.returncode == 7                    # it ended on the interrupt
    assert cap.stop() == tmp_path / "h0-p0.pcap"       # stopping again does nothing


def test_a_capture_that_ignores_the_interrupt_is_killed_after_the_timeout(tmp_path):
    proc = started(IGNORES_INTERRUPT)
    t0 = time.monotonic()
    Capture(proc, tmp_path / "x.pcap", "h0-p0").stop(timeout=0.5)
    assert proc.returncode == -9
    assert time.monotonic() - t0 >= 0.5               # the timeout, then the kill
