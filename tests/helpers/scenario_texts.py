"""Scenario TOML the tests share: fragments (the smallest fabric every unit test builds on, a link
fault) and the whole scenarios of the integration tests, in one place so that no test carries
its own copy of a text another has."""

# 2 planes x 2 T0 groups x 2 spines x 2 hosts per group: 4 hosts, 8 switches. Every text here
# pins time_scale (the default "auto" would calibrate the machine before a run).
SMALL_FABRIC = """[fabric]
planes = 2
groups = 2
spines = 2
hosts_per_group = 2
time_scale = 1
"""

LINK_DOWN_AT_1_5_S = """[[faults]]
at_s = 1.5
action = "link_down"
a = "t0p0g0"
b = "t1p0s0"
"""


def link_fault(action: str, a: str, b: str, **when) -> str:
    """One [[faults]] entry on the link a~b; `when` is its trigger (at_s=1.0, at_iteration=30)."""
    (key, value), = when.items()
    return f'[[faults]]\n{key} = {value}\naction = "{action}"\na = "{a}"\nb = "{b}"\n'


def fabric_table(*, groups: int = 2, spines: int = 2, hosts_per_group: int = 2,
                 link_mbit: int = 30, routing: str | None = None, extra: str = "",
                 time_scale="1") -> str:
    """A 2-plane [fabric] table with every link at `link_mbit` and the time scale pinned (1
    unless given); `extra`: further lines of it."""
    text = (f"[fabric]\nplanes = 2\ngroups = {groups}\nspines = {spines}\n"
            f"hosts_per_group = {hosts_per_group}\nhost_link_mbit = {link_mbit}\n"
            f"fabric_link_mbit = {link_mbit}\ntime_scale = {time_scale}\n")
    if routing is not None:
        text += f'routing = "{routing}"\n'
    return text + extra


def link_down_and_up(key: str, down, up, a: str = "t0p0g0", b: str = "t1p0s0") -> str:
    """The link a~b down at `key` = down and up again at `key` = up (key: at_s, at_iteration)."""
    return link_fault("link_down", a, b, **{key: down}) + link_fault("link_up", a, b, **{key: up})


# ---------------------------------------------------------------- the integration tests' runs
# Placeholders in braces are filled by the test that runs the text ({names}, {mode}, {port}, {k}).

# tests/integration/test_analysis_run.py: a tiny fabric, a short all-reduce, one link down and up.
ANALYSIS_RUN = '''
name = "analysis-it"
description = "analysis integration test: tiny fabric, short all-reduce, one link down and up"

''' + fabric_table(hosts_per_group=1, link_mbit=50, routing="srv6") + '''
[transport]
names = [{names}]

[collective]
kind = "allreduce"
message_bytes = 262144
# at line rate an iteration takes at least 21 ms: the 49 after the link-down at iteration 10
# outlast the link-up 0.8 s later at any speed
iterations = 60
warmup = 1
timeout_s = 30

[options]
capture = true

''' + link_fault("link_down", "t0p0g0", "t1p0s0", at_iteration=10) + \
    link_fault("link_up", "t0p0g0", "t1p0s0", after_s=0.8)

# tests/integration/test_endpoint_incast_trimming.py: 4-to-1 incast into h0 with victims.
INCAST_TRIMMING = '\nname = "short-incast-{mode}"\n' + \
    fabric_table(hosts_per_group=3, routing="srv6") + '''[transport]
names = ["mrc"]
[collective]
kind = "incast"
message_bytes = 131072
iterations = 8
warmup = 1
qps_per_peer = 1
incast_target = "h0"
victim = ["h3", "h1"]
timeout_s = 60
[options]
capture = false
trimming = {trimming}
# loss verdicts are the tolerant rule's; a time-scale-1 run on a shared machine is CPU-bound
[mrc.qp]
loss_policy = "tolerant"
'''

# tests/integration/test_live_metrics.py: a short MRC run serving its counters on {port}.
LIVE_METRICS = '\nname = "metrics-it"\n' + fabric_table(groups=1, spines=1) + '''[transport]
names = ["mrc"]
[collective]
kind = "allreduce"
message_bytes = 262144
iterations = 16
warmup = 1
timeout_s = 20
[options]
capture = false
metrics_port = {port}
''' + link_fault("link_down", "h0", "t0p1g0", at_iteration=4)

# tests/integration/test_retirements_fabric.py: a short MRC ring with t0p0g0~t1p0s0 down at
# iteration 4 of 24 and up at 16, both inside the traffic at any speed of the run.
RETIREMENTS = '\nname = "short-retirements"\n' + fabric_table(routing="srv6") + '''[transport]
names = ["mrc"]
[collective]
kind = "allreduce"
message_bytes = 524288
iterations = 24
warmup = 1
qps_per_peer = 2
timeout_s = 20
[options]
capture = false
''' + link_down_and_up("at_iteration", 4, 16)

# tests/integration/test_run_record_interrupted.py: long enough to be interrupted while it runs.
RECORD_INTERRUPTED = '\nname = "record-it"\n' + fabric_table(groups=1, spines=1) + '''[transport]
names = ["mrc"]
[collective]
kind = "allreduce"
message_bytes = 262144
iterations = 200
warmup = 1
timeout_s = 20
[options]
capture = false
'''

# tests/integration/test_run_verdicts.py: a link down and up, a clear the controller refuses
# (entry 2) and a fault due long after the traffic (entry 3); validation refuses both, so the
# test lets them through (what is under test is how a run reports them).
RUN_VERDICTS = '\nname = "verdicts-it"\n' + \
    fabric_table(hosts_per_group=1, link_mbit=50) + '''[transport]
names = ["tcp"]
tcp_reconvergence_s = 1.0
[collective]
kind = "allreduce"
message_bytes = 262144
iterations = 30
warmup = 1
timeout_s = 20
[options]
capture = false
''' + link_fault("link_down", "t0p0g0", "t1p0s0", at_iteration=5) + \
    link_fault("link_up", "t0p0g0", "t1p0s0", after_s=0.3) + \
    link_fault("gray_loss_clear", "t0p1g0", "t1p1s0", at_iteration=20) + \
    link_fault("link_down", "t0p1g0", "t1p1s1", at_s=600.0)

# tests/integration/test_runner_mrc.py: a short ring all-reduce over MRC and RoCE.
RUNNER_MRC_ROCE = '\nname = "short-mrc-roce"\n' + fabric_table(routing="srv6") + '''[transport]
names = ["mrc", "roce"]
roce_reconvergence_s = 2.0
[collective]
kind = "allreduce"
message_bytes = 524288
iterations = 32
warmup = 1
qps_per_peer = 2
timeout_s = 20
[options]
capture = false
''' + link_fault("link_down", "t0p0g0", "t1p0s0", at_iteration=6) + \
    link_fault("link_up", "t0p0g0", "t1p0s0", after_s=2.5)

# tests/integration/test_runner_tcp.py: a short ring all-reduce over TCP.
RUNNER_TCP = '\nname = "short-tcp"\n' + fabric_table(link_mbit=50) + '''[transport]
names = ["tcp"]
tcp_reconvergence_s = 1.0
tcp_port = 47000      # the h1->h2 hop's data leaves t0p0g0 on spine 0: it crosses the failed link
[collective]
kind = "allreduce"
message_bytes = 262144
iterations = 40
warmup = 1
qps_per_peer = 2
timeout_s = 20
[options]
capture = true
''' + link_fault("link_down", "t0p0g0", "t1p0s0", at_iteration=8) + \
    link_fault("link_up", "t0p0g0", "t1p0s0", at_iteration=30)

# tests/integration/test_time_scale_run.py, at time_scale {k}. A sendrecv of 2 MiB per rank at
# 20 Mbit/s: each iteration streams ~0.4 s of link time at k = 1 with few dependent steps, so the
# links, not the CPU, set its pace on a loaded 2-core machine (a ring all-reduce of 256 KiB
# measured the scheduler instead: 0.68 s wall at k = 1 against 0.45 s at k = 2 under a load
# average of 12).
TIME_SCALE_RUN = '\nname = "scaled"\n' + \
    fabric_table(link_mbit=20, extra="mtu = 9000\n", time_scale="{k}") + '''[transport]
names = ["mrc"]
[collective]
kind = "sendrecv"
message_bytes = 2097152
iterations = 5
warmup = 1
timeout_s = 20
[options]
capture = false
trimming = true
''' + link_fault("link_down", "t0p1g1", "t1p1s1", at_s=0.3)

# tests/emulation/calibration: a fault with a time (a flap's period) and one with a rate (an
# ECN marking rate), both of which the time scale converts.
FLAP_THEN_ECN = """
[[faults]]
at_s = 1.5
action = "flap"
a = "t0p0g0"
b = "t1p0s0"
period_s = 0.5
count = 2

[[faults]]
after_s = 2.0
action = "ecn_mark"
a = "t0p0g0"
b = "t1p0s0"
rate_mbit = 40
"""
