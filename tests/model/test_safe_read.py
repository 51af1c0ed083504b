"""model.safe_read.read_regular: a regular file of at most max_bytes is read whole; one byte more,
a file that is longer than its stat size says (/proc), or anything not a regular file is
refused, never cut short and never waited on."""
import os
import time

import pytest

from model.safe_read import NotRegularFile, read_regular


def test_a_file_of_exactly_max_bytes_is_read_and_one_byte_more_is_refused(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"x" * 1000)
    assert read_regular(path, 1000) == b"x" * 1000
    with pytest.raises(NotRegularFile, match="1000 bytes; a file of this kind is at most 999"):
        read_regular(path, 999)


def test_a_file_longer_than_its_stat_size_is_refused_not_cut():
    # /proc files stat as 0 bytes: the bound is enforced on what is read (max_bytes + 1 read
    # tells "longer" from "exactly max_bytes")
    text = open("/proc/self/status", "rb").read()
    assert len(text) > 200
    with pytest.raises(NotRegularFile, match="grew past 200 bytes"):
        read_regular("/proc/self/status", 200)


def test_a_file_that_fills_the_bound_exactly_through_reads_is_whole(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(bytes(range(256)) * 4)
    assert read_regular(path, 1024) == bytes(range(256)) * 4


@pytest.mark.parametrize("kind", ["fifo", "directory", "device"])
def test_what_is_not_a_regular_file_is_refused_at_once(tmp_path, kind):
    path = {"directory": tmp_path, "device": "/dev/zero"}.get(kind, tmp_path / "fifo")
    if kind == "fifo":
        os.mkfifo(path)
    t0 = time.monotonic()
    with pytest.raises(NotRegularFile, match="not a regular file"):
        read_regular(path, 1 << 20)
    assert time.monotonic() - t0 < 5


def test_a_missing_file_is_the_os_error_itself(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_regular(tmp_path / "nope", 10)
