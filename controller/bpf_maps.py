"""Read and write the trimming program's BPF maps with raw bpf() syscalls (ctypes).

The in-fabric trimming / virtual-queue ECN program (emulation/network/bpf/trim.c) gets two maps per
attached port instance: a config map and a state map (its counters). Both the fabric setup
(emulation.network.trimming, which writes the config) and the controller (which serves the counters
on GET /counters/trim) need to reach them, so the syscall layer lives here, below both.
Why raw syscalls and not bpftool: no extra package, no subprocess per read (fabric counters on
dozens of ports stay cheap), and the commands used (GET_FD_BY_ID, OBJ_GET_INFO_BY_FD,
MAP_LOOKUP/UPDATE_ELEM, PROG_TEST_RUN) have a stable kernel ABI.

Finding a port's program id needs `tc filter show dev X egress`; running it is the caller's
job (prog_id_from_filters parses its output), so this module starts no processes.
"""
from __future__ import annotations

import ctypes
import os
import re
import struct
from contextlib import contextmanager

FILTER_PREF = 1          # tc filter preference/handle of the program on clsact egress
CONFIG_MAP = "mrc_trim_cfg"
STATE_MAP = "mrc_trim_state"

# struct port_state in trim.c: two u32 then one u64 per field.
STATE_FIELDS = ("vq_bytes", "last_ns", "offered_packets", "offered_bytes", "marked", "trimmed",
                "trimmed_bytes_cut", "dropped", "dropped_bytes", "mrc_data_packets",
                "vq_peak_bytes", "errors")
STATE_STRUCT = struct.Struct("<II" + "Q" * len(STATE_FIELDS))


class TrimmingError(RuntimeError):
    """tc or bpf() failed; the message names the command/port and the kernel's reason."""


def parse_state(value: bytes) -> dict:
    return dict(zip(STATE_FIELDS, STATE_STRUCT.unpack(value)[2:]))


def prog_id_from_filters(filter_show_output: str, intf: str) -> int:
    """Program id in `tc filter show dev intf egress` output; TrimmingError if not attached."""
    for line in filter_show_output.splitlines():
        if f"pref {FILTER_PREF} " in line and " bpf " in line:
            m = re.search(r"\bid (\d+)", line)
            if m:
                return int(m.group(1))
    raise TrimmingError(f"no trimming program attached on {intf} egress; call attach() first")


# ---------------------------------------------------------------- raw bpf() syscalls

_SYS_BPF = {"x86_64": 321, "aarch64": 280}.get(os.uname().machine)
_BPF_MAP_LOOKUP_ELEM, _BPF_MAP_UPDATE_ELEM = 1, 2
_BPF_PROG_TEST_RUN, _BPF_PROG_GET_FD_BY_ID, _BPF_MAP_GET_FD_BY_ID = 10, 13, 14
_BPF_OBJ_GET_INFO_BY_FD = 15
_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _bpf(cmd: int, attr: ctypes.Array, what: str) -> int:
    if _SYS_BPF is None:
        raise TrimmingError(f"bpf() syscall number unknown on {os.uname().machine}")
    ret = _libc.syscall(_SYS_BPF, cmd, ctypes.byref(attr), ctypes.sizeof(attr))
    if ret < 0:
        err = ctypes.get_errno()
        raise TrimmingError(f"bpf({what}) failed: {os.strerror(err)} (errno {err})")
    return ret


def _attr(size: int = 128) -> ctypes.Array:
    return ctypes.create_string_buffer(size)


def _addr(buf) -> int:
    return ctypes.addressof(buf)


def _fd_by_id(cmd: int, obj_id: int, what: str) -> int:
    attr = _attr()
    struct.pack_into("<I", attr, 0, obj_id)
    return _bpf(cmd, attr, f"{what} id {obj_id}")


def _obj_info(fd: int, size: int, prefill: bytes = b"") -> ctypes.Array:
    info = ctypes.create_string_buffer(prefill.ljust(size, b"\0"), size)
    attr = _attr()
    struct.pack_into("<IIQ", attr, 0, fd, size, _addr(info))
    _bpf(_BPF_OBJ_GET_INFO_BY_FD, attr, "OBJ_GET_INFO_BY_FD")
    return info


def _prog_map_ids(prog_fd: int) -> list[int]:
    # struct bpf_prog_info: nr_map_ids at offset 52, map_ids pointer at 56.
    ids = (ctypes.c_uint32 * 16)()
    prefill = bytearray(64)
    struct.pack_into("<IQ", prefill, 52, 16, ctypes.addressof(ids))
    info = _obj_info(prog_fd, 64, bytes(prefill))
    count = struct.unpack_from("<I", info, 52)[0]
    return list(ids[:min(count, 16)])


def _map_name(map_fd: int) -> str:
    info = _obj_info(map_fd, 40)   # struct bpf_map_info: name[16] at offset 24
    return info.raw[24:40].split(b"\0", 1)[0].decode()


def map_lookup(map_fd: int, size: int) -> bytes:
    """Value of key 0 (both maps are one-element arrays)."""
    key = ctypes.c_uint32(0)
    value = ctypes.create_string_buffer(size)
    attr = _attr()
    struct.pack_into("<IIQQQ", attr, 0, map_fd, 0, ctypes.addressof(key), _addr(value), 0)
    _bpf(_BPF_MAP_LOOKUP_ELEM, attr, "MAP_LOOKUP_ELEM")
    return value.raw


def map_update(map_fd: int, data: bytes) -> None:
    """Set key 0 to `data`."""
    key = ctypes.c_uint32(0)
    value = ctypes.create_string_buffer(data, len(data))
    attr = _attr()
    struct.pack_into("<IIQQQ", attr, 0, map_fd, 0, ctypes.addressof(key), _addr(value), 0)
    _bpf(_BPF_MAP_UPDATE_ELEM, attr, "MAP_UPDATE_ELEM")


@contextmanager
def port_maps(prog_id: int, intf: str):
    """(config map fd, state map fd, program fd) of the program instance `prog_id` on intf;
    every fd is closed on exit."""
    fds = []
    try:
        prog_fd = _fd_by_id(_BPF_PROG_GET_FD_BY_ID, prog_id, "PROG_GET_FD_BY_ID")
        fds.append(prog_fd)
        maps = {}
        for map_id in _prog_map_ids(prog_fd):
            fd = _fd_by_id(_BPF_MAP_GET_FD_BY_ID, map_id, "MAP_GET_FD_BY_ID")
            fds.append(fd)
            maps[_map_name(fd)] = fd
        missing = {CONFIG_MAP, STATE_MAP} - set(maps)
        if missing:
            raise TrimmingError(f"program on {intf} lacks map(s) {sorted(missing)}: "
                                "is it really emulation/network/bpf/trim.o?")
        yield maps[CONFIG_MAP], maps[STATE_MAP], prog_fd
    finally:
        for fd in fds:
            os.close(fd)


def read_counters(prog_id: int, intf: str) -> dict:
    """The state map of one port instance as {field: value}."""
    with port_maps(prog_id, intf) as (_cfg, state_fd, _prog):
        return parse_state(map_lookup(state_fd, STATE_STRUCT.size))


def prog_test_run_ns(prog_fd: int, frame: bytes, repeat: int) -> float:
    """Average ns the program spends on `frame` (BPF_PROG_TEST_RUN, in-kernel loop)."""
    data_in = ctypes.create_string_buffer(frame, len(frame))
    data_out = ctypes.create_string_buffer(len(frame) + 256)
    attr = _attr()
    struct.pack_into("<IIIIQQII", attr, 0, prog_fd, 0, len(frame), len(data_out),
                     _addr(data_in), _addr(data_out), repeat, 0)
    _bpf(_BPF_PROG_TEST_RUN, attr, "PROG_TEST_RUN")
    return float(struct.unpack_from("<I", attr, 36)[0])
