"""Collectives over the real TCP transport on 127.0.0.1 (no root): exact results, several
connections per peer, framing of large and empty messages, clean shutdown."""
import threading

import numpy as np
import pytest

from tests.helpers.rank_threads import run_ranks
from tests.helpers.workers import free_ports
from traffic.workload import collectives as C
from traffic.workload.comm import CommError, CommTimeout, create_communicator
from traffic.workload.worker_config import WorkerConfig
from traffic.workload.tcp_comm import TCPComm


def run_tcp_world(world, fn, qps=1, planes=1, timeout=30):
    ports = free_ports(world * planes)
    endpoints = [[("127.0.0.1", ports[r * planes + p]) for p in range(planes)] for r in range(world)]
    results, errors = [None] * world, []

    def body(rank):
        try:
            with TCPComm(rank, world, endpoints, qps_per_peer=qps, connect_timeout_s=10) as comm:
                results[rank] = fn(comm)
        except BaseException as exc:  # noqa: BLE001
            errors.append((rank, exc))

    run_ranks(world, body, timeout, errors)
    if errors:
        raise errors[0][1]
    return results


@pytest.mark.parametrize("world,qps,planes", [(2, 1, 1), (3, 2, 2), (4, 3, 2), (5, 1, 1)])
@pytest.mark.parametrize("collective", C.COLLECTIVES)
def test_every_collective_verifies_over_tcp(world, qps, planes, collective):
    if collective == "bisection" and world % 2:
        pytest.skip("bisection pairs the two halves: even world sizes only")
    n = 30011  # ~120 KB, not divisible by world size or QP count
    victim = (world - 1, 1) if collective == "incast" and world > 2 else None

    def body(comm):
        return [C.run_and_verify(comm, collective, n, it, qps=qps, timeout_s=10, victim=victim)
                for it in range(3)]

    for rank_results in run_tcp_world(world, body, qps=qps, planes=planes):
        for ok, msg in rank_results:
            assert ok, msg


def test_large_allreduce_and_stats():
    n = 1 << 20  # 4 MiB per rank: exercises partial sends/receives of non-blocking sockets

    def body(comm):
        ok = C.run_and_verify(comm, "allreduce", n, 0, qps=2, timeout_s=20)
        return ok, comm.stats()

    for (ok, msg), stats in run_tcp_world(3, body, qps=2, planes=2):
        assert ok, msg
        expected = C.bytes_moved("allreduce", n, 3)
        assert abs(stats["tx_bytes"] - expected) <= 3 * 4  # chunk rounding
        assert abs(stats["rx_bytes"] - expected) <= 3 * 4
        assert isinstance(stats["retransmits"], int) and stats["retransmits"] >= 0  # kernel TCP_INFO


def test_unexpected_messages_empty_messages_and_tag_matching():
    def body(comm):
        if comm.rank == 0:
            hs = [comm.isend(1, b"", tag=7), comm.isend(1, b"second", tag=9),
                  comm.isend(1, b"first", tag=8)]
            comm.wait(hs, 5)
            return None
        import time
        time.sleep(0.2)  # let everything arrive unexpected
        h8, h9, h7 = comm.irecv(0, 5, tag=8), comm.irecv(0, 6, tag=9), comm.irecv(0, 0, tag=7)
        comm.wait([h7, h8, h9], 5)
        return bytes(h7.data), bytes(h8.data), bytes(h9.data)

    assert run_tcp_world(2, body)[1] == (b"", b"first", b"second")


@pytest.mark.parametrize("sent,message", [
    (None, "closed all connections"),                        # the peer exits without sending
    (b"12345678", "rank 1: message from 0 tag 1 has 8 bytes, receiver expected 4"),
], ids=["peer-closes-early", "length-mismatch"])
def test_a_pending_receive_fails_loudly(sent, message):
    def body(comm):
        if comm.rank == 0:
            if sent is not None:
                comm.wait([comm.isend(1, sent, tag=1)], 5)
            return None
        h = comm.irecv(0, 4, tag=1)
        with pytest.raises(CommError, match=message):
            comm.wait([h], 5)
        return "raised"

    assert run_tcp_world(2, body)[1] == "raised"


def test_timeout_names_pending_and_connect_failure_is_clear():
    def body(comm):
        if comm.rank == 1:
            h = comm.irecv(0, 4, tag=3)
            with pytest.raises(CommTimeout, match="tag=3"):
                comm.wait([h], 0.2)
        else:
            import time
            time.sleep(0.5)  # stay connected, send nothing
        return True

    run_tcp_world(2, body)
    port = free_ports(2)
    with pytest.raises(CommError, match="cannot connect QP 0 to rank 0"):
        TCPComm(1, 2, [[("127.0.0.1", port[0])], [("127.0.0.1", port[1])]], connect_timeout_s=0.3)


def test_factory_builds_tcp_from_a_worker_config():
    ports = free_ports(2)
    config = WorkerConfig.from_dict({
        "transport": "tcp", "world_size": 2, "collective": "sendrecv", "message_bytes": 400,
        "iterations": 1, "log_dir": "unused", "qps_per_peer": 1,
        "tcp": {"endpoints": [[["127.0.0.1", ports[0]]], [["127.0.0.1", ports[1]]]],
                "connect_timeout_s": 10}})
    out = []

    def body(rank):
        with create_communicator("tcp", rank, config) as comm:
            out.append(C.run_and_verify(comm, "sendrecv", 100, 0, timeout_s=5))

    threads = [threading.Thread(target=body, args=(r,)) for r in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert out == [(True, "ok"), (True, "ok")]
