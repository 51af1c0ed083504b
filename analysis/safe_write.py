"""Writing into a run directory without ever following a link (run directories travel between
machines, e.g. as tarballs, and may hold links planted to turn the reader's writes elsewhere).

Every file the analysis writes goes through write_bytes / write_text: the output directory must
be a real directory all the way (no link on its path below the existing root it was made in),
the file is created new with O_CREAT | O_EXCL | O_NOFOLLOW relative to that directory's open
handle and renamed over the old name, so a link standing at the name is replaced, never
followed. check_run_dir refuses, before anything is read, a run directory holding a link that
leaves it. Errors are UnsafePath, an OSError, so callers that report OSErrors report these.
"""
from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

MAX_ENTRIES = 100_000      # a run directory with more entries than this is not one of ours
MAX_DEPTH = 32             # nor one nested deeper (a run is <run>/<transport>/pcaps/...)


class UnsafePath(OSError):
    """A link (or a non-directory) where the analysis would write, or a link leaving the run."""


def check_run_dir(run_dir) -> Path:
    """The run directory, resolved, after checking that no link inside it points outside it.
    Walked with an explicit stack (a planted chain of a thousand directories must not exhaust
    the recursion), at most MAX_DEPTH levels and MAX_ENTRIES entries deep."""
    root = Path(os.path.realpath(run_dir))
    seen = 0
    stack = [(str(root), 0)]
    while stack:
        here, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise UnsafePath(f"{root}: directories nested more than {MAX_DEPTH} deep; not a run "
                             f"directory")
        with os.scandir(here) as entries:
            names = [e.name for e in entries]
        for name in names:
            seen += 1
            if seen > MAX_ENTRIES:
                raise UnsafePath(f"{root}: more than {MAX_ENTRIES} entries; not a run directory")
            path = os.path.join(here, name)
            mode = os.lstat(path).st_mode
            if stat.S_ISDIR(mode):
                stack.append((path, depth + 1))
                continue
            if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
                raise UnsafePath(f"{path} is not a regular file (a FIFO, device or socket); a "
                                 f"run directory holds none: refusing to read this run")
            if stat.S_ISLNK(mode):
                _check_link(path, root)
    return root


def _check_link(path: str, root: Path) -> None:
    """A link inside the run must stay inside it (by whole path components: a sibling
    <run>-evil/ shares the run's name as a string prefix, not as a directory) and end at a
    regular file or a directory."""
    target = os.path.realpath(path)
    if os.path.commonpath([target, str(root)]) != str(root):
        raise UnsafePath(f"{path} is a link to {target[:120]}, outside the run directory "
                         f"{root}; refusing to read or write this run (remove the link)")
    if os.path.exists(target) and not (os.path.isfile(target) or os.path.isdir(target)):
        raise UnsafePath(f"{path} links to {target[:120]}, not a regular file")


def ensure_dir(path) -> Path:
    """Create `path` (and missing parents) as real directories; UnsafePath if any part of it
    that had to exist, or the directory itself, is a link or not a directory."""
    path = Path(os.path.abspath(path))
    missing = []
    probe = path
    while not os.path.lexists(probe):
        missing.append(probe)
        probe = probe.parent
    if missing and os.path.islink(probe):
        raise UnsafePath(f"{probe} is a link; refusing to write under it")
    for d in reversed(missing):
        try:
            os.mkdir(d, 0o755)
        except FileExistsError:
            pass
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        raise UnsafePath(f"{path} is a link (to {os.path.realpath(path)[:120]}); refusing to "
                         f"write through it (remove the link)")
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafePath(f"{path} exists and is not a directory")
    return path


def write_bytes(path, data: bytes) -> Path:
    """Write `data` as `path`: a new file in a checked directory, renamed over the old name."""
    path = Path(path)
    directory = ensure_dir(path.parent)
    dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    tmp = f".{path.name}.{secrets.token_hex(4)}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o644, dir_fd=dfd)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        try:
            st = os.stat(path.name, dir_fd=dfd, follow_symlinks=False)
        except FileNotFoundError:
            st = None
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise UnsafePath(f"{path} is a directory; cannot write a file there")
        os.replace(tmp, path.name, src_dir_fd=dfd, dst_dir_fd=dfd)
        tmp = None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp, dir_fd=dfd)
            except FileNotFoundError:
                pass
        os.close(dfd)
    return path


def write_text(path, text: str, encoding: str = "utf-8") -> Path:
    return write_bytes(path, text.encode(encoding))


def save_figure(fig, path, **kw) -> Path:
    """matplotlib's savefig into memory, then write_bytes (savefig itself follows links)."""
    import io
    buf = io.BytesIO()
    fig.savefig(buf, format=Path(path).suffix.lstrip(".") or "png", **kw)
    return write_bytes(path, buf.getvalue())
