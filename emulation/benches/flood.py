"""The benches' one packet flood: a raw AF_PACKET socket sends one frame out of an interface as
fast as a Python loop can, for a given time. Called in-process for an interface of this network
namespace, or run as `python -m emulation.benches.flood INTF FRAME_HEX SECONDS` (prints the
count) inside a fabric host's namespace.
"""
from __future__ import annotations

import socket
import sys
import time

# Frames sent between two looks at the clock: a clock read per frame would cost as much as a send.
BATCH = 256


def flood(intf: str, frame: bytes, seconds: float) -> int:
    """Send `frame` out of `intf` until `seconds` have passed; return how many the kernel took
    (a send refused with ENOBUFS, dropped at egress, does not count)."""
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    try:
        sock.bind((intf, 0))
        sent, send = 0, sock.send
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            for _ in range(BATCH):
                try:
                    send(frame)
                except OSError:
                    continue
                sent += 1
    finally:
        sock.close()
    return sent


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: python -m emulation.benches.flood INTF FRAME_HEX SECONDS", file=sys.stderr)
        return 2
    intf, frame_hex, seconds = argv
    try:
        frame, duration = bytes.fromhex(frame_hex), float(seconds)
    except ValueError as err:
        print(f"flood: FRAME_HEX must be hex and SECONDS a number: {err}", file=sys.stderr)
        return 2
    try:
        print(flood(intf, frame, duration))
    except OSError as err:
        print(f"flood: cannot send on {intf}: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
