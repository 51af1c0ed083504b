"""Scenario TOML fragments the scenario tests share (the smallest fabric every test builds on)."""

# 2 planes x 2 T0 groups x 2 spines x 2 hosts per group: 4 hosts, 8 switches.
SMALL_FABRIC = """[fabric]
planes = 2
groups = 2
spines = 2
hosts_per_group = 2
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
