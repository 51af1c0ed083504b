"""The fabric lock is root's alone: another user can neither reach nor open it, it is never
opened through a link, and a lock held too long names the process that holds it (whoever it is,
from /proc/locks, not from what the holder wrote)."""
import fcntl
import os
import stat
import subprocess
import sys

import pytest

from emulation.network import fabric_lock


@pytest.fixture
def lock_file(tmp_path, monkeypatch):
    run_dir = tmp_path / "mrclab"
    path = run_dir / "fabric.lock"
    monkeypatch.setattr(fabric_lock, "LOCK_FILE", str(path))
    return path


def test_the_lock_and_its_directory_are_private(lock_file):
    fd = fabric_lock.acquire_fabric_lock(timeout_s=0)
    try:
        assert stat.S_IMODE(os.stat(lock_file.parent).st_mode) == 0o700
        assert stat.S_IMODE(os.stat(lock_file).st_mode) == 0o600
        assert lock_file.read_text() == f"{os.getpid()}\n"
    finally:
        fabric_lock.release_fabric_lock(fd)


def test_an_open_lock_file_and_directory_left_by_older_code_are_closed(lock_file):
    lock_file.parent.mkdir(mode=0o755)
    os.chmod(lock_file.parent, 0o755)
    lock_file.write_text("")
    os.chmod(lock_file, 0o644)
    fabric_lock.release_fabric_lock(fabric_lock.acquire_fabric_lock(timeout_s=0))
    assert stat.S_IMODE(os.stat(lock_file.parent).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(lock_file).st_mode) == 0o600


def test_a_link_at_the_lock_is_refused_not_followed(lock_file, tmp_path):
    lock_file.parent.mkdir(mode=0o700)
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    lock_file.symlink_to(victim)
    with pytest.raises(fabric_lock.FabricError, match="not a link"):
        fabric_lock.acquire_fabric_lock(timeout_s=0)
    assert victim.read_text() == "keep me"


def test_a_held_lock_names_the_holder_from_proc_locks(lock_file):
    """The holder opened the file read-only and wrote nothing (as another user could when the
    file was world-readable): the error still names its pid."""
    lock_file.parent.mkdir(mode=0o700)
    lock_file.write_text("")
    code = ("import fcntl, os, sys, time\n"
            f"fd = os.open({str(lock_file)!r}, os.O_RDONLY)\n"
            "fcntl.flock(fd, fcntl.LOCK_EX)\n"
            "print('held', flush=True)\n"
            "time.sleep(30)\n")
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(fabric_lock.FabricLockTimeout, match=f"held by pid {holder.pid} "):
            fabric_lock.acquire_fabric_lock(timeout_s=0)
    finally:
        holder.kill()
        holder.wait()
    fd = fabric_lock.acquire_fabric_lock(timeout_s=5)      # free again once the holder is gone
    fabric_lock.release_fabric_lock(fd)


def test_flock_holders_reads_proc_locks_by_inode(lock_file):
    lock_file.parent.mkdir(mode=0o700)
    fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        assert fabric_lock._flock_holders(fd) == []
        fcntl.flock(fd, fcntl.LOCK_EX)
        assert fabric_lock._flock_holders(fd) == [os.getpid()]
    finally:
        os.close(fd)
