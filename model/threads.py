"""OS names of the threads that another process of the emulator looks for by name.

A worker's goodput sampler names itself SAMPLER_THREAD_NAME (traffic/workload/worker.py): it is
the fidelity monitor's probe of how late the worker's process is scheduled (analysis/fidelity.py
worker_lateness), so the fabric's scheduling (emulation/network/cgroups.py) leaves it at the
priority the worker runs at instead of niceing it with the worker's bulk threads: a niced probe
would measure its nice, not the fabric. Linux keeps 15 bytes of a thread's name.
"""
from __future__ import annotations

SAMPLER_THREAD_NAME = "mrclab-goodput"
THREAD_NAME_MAX = 15
