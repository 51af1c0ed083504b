"""Nothing is accepted that cannot run: the nft rule a gray loss generates is
one nft takes (checked by nft itself, `nft --check`), a path prober interval the endpoint could
not start with is refused with its minimum, a fault due after the longest the run can last and
a clear with no fault before it are refused at validation, with their line."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from controller import faults as F
from emulation.config import scenario as S
from tests.helpers.synthetic_run import TCP_RUN

# TCP_RUN: 30 iterations, warmup 2, timeout_s 60 (the schema's defaults): the run lasts at most
# 60 + (2 + 30) * 60 = 1980 s.
LONGEST_S = 1980.0
# TCP_RUN with traffic that outlasts any of these schedules at line rate (1 GiB messages over
# 2 x 0.1 Mbit/s), so what is under test is the rule named, not the fit to the traffic
# (tests/emulation/config/test_scenario_timing.py).
LONG_RUN = TCP_RUN.replace("message_bytes = 4000", "message_bytes = 1073741824").replace(
    "planes = 2\n", "planes = 2\nhost_link_mbit = 0.1\n")


def nft_check(script: str) -> subprocess.CompletedProcess:
    if shutil.which("nft") is None:
        pytest.fail("nft is not installed (scripts/setup.sh installs nftables)")
    argv = ["nft", "--check", script]
    if os.geteuid() != 0:
        argv = ["unshare", "-rn"] + argv
    return subprocess.run(argv, capture_output=True, text=True, timeout=30)


@pytest.mark.parametrize("percent, rule", [
    (0, "numgen random mod 10000 < 0 counter drop"),
    (99.99, "numgen random mod 10000 < 9999 counter drop"),
    (99.995, "counter drop"),          # rounds to 10000 of 10000 values: every packet
    (100, "counter drop"),
    (12.345, "numgen random mod 10000 < 1234 counter drop"),   # round(1234.5) = 1234 (even)
])
def test_every_gray_loss_percent_makes_a_rule_nft_takes(percent, rule):
    cmd = F.validate({"action": "gray_loss", "a": "t0p0g0", "b": "t1p0s0", "percent": percent},
                     S.parse(TCP_RUN).topology)
    [argv] = F.gray_loss_commands([], "t0p0g0-e3", cmd["percent"])
    assert argv[0] == "nft" and argv[1].endswith(f"egress {rule}")
    done = nft_check(argv[1])
    assert done.returncode == 0, done.stderr


def test_nft_check_does_refuse_the_old_out_of_range_rule():
    """The check itself can fail: the rule the code used to make for 100 %."""
    script = F.gray_loss_commands([], "t0p0g0-e3", 50)[0][1].replace("< 5000", "< 10000")
    done = nft_check(script)
    assert done.returncode != 0 and "exceeds valid range" in done.stderr


@pytest.mark.parametrize("value", [9e-7, 0.5, 1e-300])
def test_a_path_probe_interval_the_endpoint_cannot_run_is_refused(value):
    text = TCP_RUN + f"[mrc.endpoint]\npath_probe_interval_ms = {value}\n"
    with pytest.raises(S.ScenarioError, match="path_probe_interval_ms: must be 0 \\(off\\) or "
                                              "between 1.0 and"):
        S.parse(text)
    S.parse(TCP_RUN + "[mrc.endpoint]\npath_probe_interval_ms = 1\n")
    S.parse(TCP_RUN + "[mrc.endpoint]\npath_probe_interval_ms = 0\n")


def fault(action, when, extra=""):
    return (f'[[faults]]\n{when}\naction = "{action}"\na = "t0p0g0"\nb = "t1p0s1"\n{extra}')


def test_a_fault_due_after_the_longest_run_is_refused_with_its_line():
    S.parse(LONG_RUN + fault("link_down", f"at_s = {LONGEST_S}"))
    with pytest.raises(S.ScenarioError) as err:
        S.parse(LONG_RUN + fault("link_down", f"at_s = {LONGEST_S + 1}"))
    line = (LONG_RUN + fault("link_down", "at_s")).splitlines().index(f"at_s") + 1
    assert f"<scenario>:{line}: [[faults]] #1 at_s" in str(err.value)
    assert "past the longest this run can last (1980 s" in str(err.value)
    # after_s chains add up: 1000 + 1000 > 1980
    with pytest.raises(S.ScenarioError, match="#2 after_s: comes 2000 s after"):
        S.parse(LONG_RUN + fault("link_down", "at_s = 1000") + fault("link_up", "after_s = 1000"))


def test_a_clear_without_its_fault_is_refused_at_validation():
    with pytest.raises(S.ScenarioError, match="#1: gray_loss_clear on t0p0g0~t1p0s1 clears "
                                              "nothing: no gray_loss on it comes before"):
        S.parse(LONG_RUN + fault("gray_loss_clear", "at_s = 2"))
    with pytest.raises(S.ScenarioError, match="#2: gray_loss_clear .* clears nothing"):
        S.parse(LONG_RUN + fault("gray_loss", "at_s = 3", "percent = 5\n")
                + fault("gray_loss_clear", "at_s = 2"))       # the fault comes after it
    with pytest.raises(S.ScenarioError, match="degrade_clear .* clears nothing"):
        S.parse(LONG_RUN + fault("gray_loss", "at_s = 1", "percent = 5\n")
                + fault("degrade_clear", "at_s = 2"))         # another kind of fault
    ok = S.parse(LONG_RUN + fault("gray_loss", "at_s = 1", "percent = 5\n")
                 + fault("gray_loss_clear", "after_s = 1"))
    assert [e.commands[0]["action"] for e in ok.faults] == ["gray_loss", "gray_loss_clear"]
    # a fault due at an iteration may come after a clear due at a time, on a slow run
    with pytest.raises(S.ScenarioError, match="#1: gray_loss_clear on t0p0g0~t1p0s1 may come "
                                              "before the gray_loss of entry #2"):
        S.parse(LONG_RUN + fault("gray_loss_clear", "at_s = 2")
                + fault("gray_loss", "at_iteration = 3", "percent = 5\n"))
