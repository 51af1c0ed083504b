"""Collectives and the worker process that runs them, one per host.

    collectives        ring all-reduce and friends on numpy buffers, over a Communicator
    comm               the Communicator interface and an in-memory transport
    mrc_comm, tcp_comm the Communicator over MRC / RoCE (an embedded endpoint) and kernel TCP
    worker             the worker process (python -m traffic.workload.worker)
    worker_config      worker.json, written by the runner and read by every worker
    iteration_inputs   each iteration's input and expected result, one ahead
"""
