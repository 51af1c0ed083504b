"""The machine's one fabric lock, and the error type of the fabric's lifecycle.

One fabric per machine at a time: an exclusive flock on /run/mrclab/fabric.lock, held for the
fabric's whole lifetime, so concurrent sessions wait instead of tearing down each other's
switches. The lock is root's alone (directory 0700, file 0600, never opened through a link):
flock works on a read-only descriptor, so a file anyone can open is a lock anyone can hold,
stalling every fabric on the machine. A lock held too long is an error naming the holder's pid,
read from /proc/locks (so also a holder that never wrote its pid into the file).
"""
from __future__ import annotations

import fcntl
import os
import stat
import sys
import time
from pathlib import Path

from emulation.network import cleanup

LOCK_FILE = os.path.join(cleanup.RUN_DIR, "fabric.lock")


class FabricError(RuntimeError):
    """The fabric could not be built, verified or torn down; the message says which step."""


class FabricLockTimeout(FabricError):
    pass


def _flock_holders(fd: int) -> list[int]:
    """Pids holding a flock on the file open as `fd`, from /proc/locks (by device and inode):
    the true holder even when it never wrote its pid into the file."""
    st = os.fstat(fd)
    want = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    pids = []
    try:
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return pids
    for line in lines:
        fields = line.split()
        # "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF" ("->" marks a waiter)
        if "->" in fields or len(fields) < 6 or fields[1] != "FLOCK":
            continue
        if fields[5] == want and fields[4].isdigit():
            pids.append(int(fields[4]))
    return pids


def _lock_holder(fd: int | None = None) -> str:
    pids = _flock_holders(fd) if fd is not None else []
    if not pids:
        try:
            pids = [int(Path(LOCK_FILE).read_text().strip())]
        except (OSError, ValueError):
            return "an unknown process"
    pid = pids[0]
    cmd = " ".join(cleanup._cmdline(pid))[:120] or "exited?"
    return f"pid {pid} ({cmd})"


def _open_lock_file() -> int:
    """The lock file, only root's: /run/mrclab made 0700 (nobody else can reach the file, so
    nobody else can flock it, even read-only), the file 0600, never opened through a link."""
    run_dir = os.path.dirname(LOCK_FILE)
    os.makedirs(run_dir, mode=0o700, exist_ok=True)
    st = os.lstat(run_dir)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
        raise FabricError(f"{run_dir} must be a directory of uid {os.geteuid()} (found "
                          f"{stat.filemode(st.st_mode)}, uid {st.st_uid}); remove it")
    if st.st_mode & 0o077:
        os.chmod(run_dir, 0o700)
    try:
        fd = os.open(LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise FabricError(f"cannot open the fabric lock {LOCK_FILE} ({exc.strerror}); it must be "
                          f"a regular file of uid {os.geteuid()}, not a link: remove it") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
        os.close(fd)
        raise FabricError(f"the fabric lock {LOCK_FILE} is not a regular file of uid "
                          f"{os.geteuid()}; remove it")
    if st.st_mode & 0o077:
        os.fchmod(fd, 0o600)
    return fd


def acquire_fabric_lock(timeout_s: float | None = None) -> int:
    """Exclusive flock on /run/mrclab/fabric.lock; returns the fd (closing it releases the lock).
    Held: waits up to timeout_s, naming the holder's pid (from /proc/locks, whoever it is)."""
    if timeout_s is None:
        timeout_s = float(os.environ.get("MRCLAB_LOCK_TIMEOUT_S", "900"))
    fd = _open_lock_file()
    deadline = time.monotonic() + timeout_s
    announced = False
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() >= deadline:
                holder = _lock_holder(fd)
                os.close(fd)
                raise FabricLockTimeout(
                    f"fabric lock {LOCK_FILE} still held by {holder} after {timeout_s:.0f}s; "
                    f"another fabric is running (wait for it, or stop it)") from None
            if not announced:
                print(f"mrclab: waiting for the fabric lock held by {_lock_holder(fd)}",
                      file=sys.stderr, flush=True)
                announced = True
            time.sleep(0.2)
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def release_fabric_lock(fd: int) -> None:
    try:
        os.ftruncate(fd, 0)
    finally:
        os.close(fd)
