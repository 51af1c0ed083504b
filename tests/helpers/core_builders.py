"""Parts of the transport core built alone, seeded, with their event lists: an EV set with
explicit probe timing, and a receiver QP with one registered memory region."""
import random

from model.topology import make_ev
from traffic.core.evs import EVSet, PathInfo
from traffic.core.memory import MemoryRegistry
from traffic.core.qp_config import MRCConfig
from traffic.core.receiver import ReceiverQP

QP, PEER, RKEY, VA = 0x300, 0x200, 0x77, 0x10000
EV0 = make_ev(0, 1, 0x1234)


def make_evset(planes=2, spines=4, ev_count=16, backup_count=4, min_active=None, k=3, seed=1,
               backoff=1):
    """An EV set of QP 9 (probe period 1000 ns, timeout 500 ns) and the list its events go to."""
    events = []
    evs = EVSet(PathInfo(tuple(range(planes)), spines), random.Random(seed), qp=9,
                ev_count=ev_count, backup_count=backup_count, min_active=min_active,
                probe_period_ns=1000, probe_timeout_ns=500, probe_k=k, probe_backoff_max=backoff,
                emit=events.append)
    return evs, events


def receiver(**cfg):
    """Receiver QP 0x300 of peer QP 0x200 on 2 planes x 2 spines, MRCConfig(**cfg), 64 KiB
    registered at VA with RKEY; and the list its events go to."""
    events = []
    reg = MemoryRegistry()
    reg.register(bytearray(1 << 16), va=VA, rkey=RKEY)
    rx = ReceiverQP(QP, PEER, MRCConfig(**cfg), PathInfo((0, 1), 2), random.Random(1), reg,
                    emit=events.append)
    return rx, events
