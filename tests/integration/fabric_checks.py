"""What the fabric integration tests share: `mrclab` as a separate process (as a user runs it)
and the check that a fabric left nothing of itself behind."""
import sys
from pathlib import Path

from emulation import cleanup

REPO = Path(__file__).resolve().parents[2]
MRCLAB = [sys.executable, "-m", "emulation.cli"]


def assert_nothing_left():
    """No namespace, bridge, process or switch interface of a fabric is left on the machine."""
    left = cleanup.find_leftovers()
    assert left.empty(), left.describe()
    links = cleanup.root_links()
    assert not [n for n in links if cleanup.is_our_switch_intf(n) or cleanup.is_our_switch(n)]
