"""Reading a user-named input file without hanging or exhausting memory: only a regular file is
read (a FIFO would block forever, /dev/zero never ends), and only up to a size the caller says
such a file can have. Opened non-blocking, so even opening a FIFO returns at once."""
from __future__ import annotations

import os
import stat

KINDS = {stat.S_IFIFO: "a FIFO", stat.S_IFCHR: "a character device", stat.S_IFBLK:
         "a block device", stat.S_IFSOCK: "a socket", stat.S_IFDIR: "a directory"}


class NotRegularFile(OSError):
    """The path is not a regular file, or is larger than such a file can be."""


def read_regular(path, max_bytes: int) -> bytes:
    """The bytes of regular file `path` (at most max_bytes); NotRegularFile otherwise, and the
    OSError of open() as it is (FileNotFoundError, PermissionError)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = KINDS.get(stat.S_IFMT(st.st_mode), "not a regular file")
            raise NotRegularFile(f"{path} is {kind}, not a regular file; refusing to read it")
        if st.st_size > max_bytes:
            raise NotRegularFile(f"{path} is {st.st_size} bytes; a file of this kind is at most "
                                 f"{max_bytes}")
        chunks, left = [], max_bytes + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > max_bytes:
            raise NotRegularFile(f"{path} grew past {max_bytes} bytes while being read")
        return data
    finally:
        os.close(fd)
