"""OCP mrc.h max_wimm (struct mrc_qp_attr wimm.max_wimm; examples/mrc_qp.md sets 128): a
requestor keeps at most that many WRITE-with-IMM messages in flight; the next one starts when a
completion frees a slot. Plain WRITEs are not counted."""
import random

from tests.helpers.simnet import Harness, SimNet
from traffic.core.evs import PathInfo
from traffic.core.qp_config import MRCConfig
from traffic.core.sender import SenderQP


def sender(**cfg):
    base = dict(nscc_enabled=False, max_payload=1000)
    base.update(cfg)
    return SenderQP(0x10, 0x11, MRCConfig(**base), PathInfo(planes=(0, 1), spines=2),
                    random.Random(1))


def test_the_default_is_ocps_example_value():
    assert MRCConfig().max_wimm == 128


def test_only_max_wimm_messages_with_immediate_start():
    """Four one-packet WRITE-with-IMM, max_wimm 2: the first poll sends two packets; four
    plain WRITEs all go."""
    s = sender(max_wimm=2)
    for i in range(4):
        s.post_write(b"x" * 1000, 0x1000 + 1000 * i, 1, imm=i)
    assert len(s.poll(0)) == 2 and s.wimm_inflight == 2
    s = sender(max_wimm=2)
    for i in range(4):
        s.post_write(b"x" * 1000, 0x1000 + 1000 * i, 1)
    assert len(s.poll(0)) == 4 and s.wimm_inflight == 0


def test_completions_free_slots_and_every_message_arrives():
    """Six WRITE-with-IMM of two packets each, max_wimm 2, over the simulated network: never
    more than 2 in flight, all six delivered and completed."""
    h = Harness(SimNet(seed=4), cfg=MRCConfig(max_wimm=2, nscc_enabled=False, max_payload=1000))
    seen = []
    h.transfer([2000] * 6, on_step=lambda *a: seen.append(h.sender.wimm_inflight))
    assert max(seen) == 2 and h.sender.wimm_inflight == 0
    assert len(h.sender.pop_completions()) == 6
