"""MRC reliability: the names of the MRC transport core, re-exported from the modules that hold
them, so `from traffic.core.reliability import SenderQP, MRCConfig, ...` keeps working.

  traffic/core/qp_config.py      MRCConfig (every knob), PSN arithmetic
  traffic/core/memory.py         MemoryRegion, MemoryRegistry, AccessError
  traffic/core/work_requests.py  posted WRITEs and completions every QP shares, QPError
  traffic/core/rtt.py            RTT estimation, RTO and the reorder window
  traffic/core/loss_policy.py    what a loss does to its path (OCP's rule, or the tolerant one)
  traffic/core/sender.py         SenderQP
  traffic/core/receiver.py       ReceiverQP, answer_probe
  traffic/core/reverse_paths.py  the receiver's reverse EVs and their probes

All of it is pure (time is passed in, no I/O), so a fake clock and a simulated lossy network
(tests/helpers/simnet.py) drive it in unit tests.
"""
from traffic.core.loss_policy import (Decision, LossPolicy, OcpLossPolicy, TolerantLossPolicy,
                                 Verdict, make_loss_policy)
from traffic.core.memory import AccessError, MemoryRegion, MemoryRegistry
from traffic.core.qp_config import LOSS_POLICIES, MPR_UNIT, PSN_SPACE, MRCConfig, unwrap
from traffic.core.receiver import ReceiverQP, answer_probe
from traffic.core.reverse_paths import ReversePaths
from traffic.core.rtt import RttEstimator
from traffic.core.sender import SenderQP
from traffic.core.suspect_paths import UnexplainedLosses
from traffic.core.work_requests import (MAX_MESSAGE, AssembledCompletions, Completion,
                                   MessageAssembler, PostedWrites, QPError, _OutMessage, _TxRecord,
                                   segment_opcode, validate_write)

__all__ = ["AccessError", "AssembledCompletions", "Completion", "Decision", "LOSS_POLICIES",
           "LossPolicy", "MAX_MESSAGE", "MPR_UNIT", "MRCConfig", "MemoryRegion",
           "MemoryRegistry", "MessageAssembler", "OcpLossPolicy", "PSN_SPACE", "PostedWrites",
           "QPError", "ReceiverQP", "ReversePaths", "RttEstimator", "SenderQP",
           "TolerantLossPolicy", "UnexplainedLosses", "Verdict", "answer_probe",
           "make_loss_policy", "segment_opcode", "unwrap", "validate_write",
           "_OutMessage", "_TxRecord"]
