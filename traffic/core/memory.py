"""Registered memory of an endpoint: where RDMA WRITEs may land (rkey + VA range -> buffer).

Shared by the MRC receiver and the RoCE baseline; a WRITE outside every region raises
AccessError, which the receiver answers with a NACK (remote access error).
"""
from __future__ import annotations

from dataclasses import dataclass


class AccessError(ValueError):
    """A WRITE outside every registered memory region (bad rkey or VA range)."""


@dataclass
class MemoryRegion:
    rkey: int
    va: int
    buf: memoryview

    @property
    def length(self) -> int:
        return self.buf.nbytes


class MemoryRegistry:
    """Registered memory of one endpoint (the protection domain): rkey -> writable buffer."""

    def __init__(self) -> None:
        self.regions: dict[int, MemoryRegion] = {}
        self._next_rkey = 0x100
        self._next_va = 0x1000_0000

    def register(self, buf, va: int | None = None, rkey: int | None = None) -> MemoryRegion:
        view = memoryview(buf).cast("B")
        if view.readonly:
            raise ValueError("memory region buffer must be writable (bytearray, numpy array, ...)")
        if rkey is None:
            rkey = self._next_rkey
            self._next_rkey += 1
        if rkey in self.regions:
            raise ValueError(f"rkey {rkey:#x} already registered")
        if va is None:
            va = self._next_va
            self._next_va += (view.nbytes + 0xFFFF) & ~0xFFFF or 0x10000
        mr = MemoryRegion(rkey=rkey, va=va, buf=view)
        self.regions[rkey] = mr
        return mr

    def deregister(self, rkey: int) -> None:
        self.regions.pop(rkey, None)

    def write(self, rkey: int, va: int, data) -> None:
        mr = self.regions.get(rkey)
        if mr is None:
            raise AccessError(f"unknown rkey {rkey:#x}")
        off = va - mr.va
        n = len(data)
        if off < 0 or off + n > mr.length:
            raise AccessError(f"VA range {va:#x}+{n} outside region rkey {rkey:#x} "
                              f"[{mr.va:#x}, {mr.va + mr.length:#x})")
        mr.buf[off:off + n] = data
