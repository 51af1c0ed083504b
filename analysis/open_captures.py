"""`mrclab wireshark RUN [--transport T]`: one capture file of a run, read with the MRC dissector.

A run captures every host NIC port separately (<run>/<transport>/pcaps/h<n>-p<plane>.pcap).
mergecap (Debian's wireshark-common, installed with tshark) merges them in time order into one
pcapng; then Wireshark opens it with analysis/wireshark/mrc.lua when a display exists, or the
exact wireshark and tshark command lines are printed (tshark works headless).
"""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

from analysis import safe_write
from analysis.logs import MAX_JSON_BYTES, resolve_run, transport_dirs
from model.argtypes import UsageError, add_renamed
from model.events import TRANSPORTS
from model import timescale
from model.proc import run_checked
from model.safe_read import read_regular

DISSECTOR = Path(__file__).resolve().with_name("wireshark") / "mrc.lua"


def add_arguments(parser) -> None:
    """The options of `mrclab wireshark`."""
    parser.add_argument("run", nargs="?", default="latest",
                        help="run directory or 'latest' (default: the newest under results/)")
    parser.add_argument("--transport", default=None, choices=TRANSPORTS,
                        help="this transport's captures only (default: every transport of "
                             "the run, one merged file each: each ran on its own fabric with the "
                             "same addresses, so their packets must not be mixed)")
    parser.add_argument("--merged-pcap", default=None, metavar="FILE",
                        help="the merged capture file to write, with --transport or for a run of "
                             "one transport (default: <run>/analysis/captures-<transport>.pcapng)")
    add_renamed(parser, "--out", "--merged-pcap")
    parser.add_argument("--print-only", action="store_true",
                        help="write nothing: print the mergecap, wireshark and tshark command "
                             "lines only")


def run_captures(run_dir: Path, transport: str | None) -> dict[str, list[Path]]:
    """The run's capture files by transport (one transport, or every one that has captures),
    each list sorted; UsageError if there are none."""
    dirs = transport_dirs(run_dir)
    if transport is not None:
        if transport not in dirs:
            known = ", ".join(dirs) or "none"
            raise UsageError(f"--transport {transport}: {run_dir} has no captures or logs of it "
                             f"(transports there: {known})")
        dirs = {transport: dirs[transport]}
    found = {name: sorted([*d.glob("pcaps/*.pcap"), *d.glob("*.pcap")])
             for name, d in dirs.items()}
    found = {name: pcaps for name, pcaps in found.items() if pcaps}
    if not found:
        raise UsageError(f"{run_dir}: no capture files (<transport>/pcaps/*.pcap); was the run "
                         f"made with captures on?")
    return found


def merge(pcaps: list[Path], out: Path) -> Path:
    """mergecap the captures into out (chronological merge); raises on a missing or failing
    mergecap with its stderr. mergecap opens its output following links, so it writes into a
    private directory made beside `out` (mode 0700, new: nobody can plant a link in it) and
    the result is renamed over `out`: a link standing at `out` is replaced, never followed."""
    mergecap = shutil.which("mergecap")
    if mergecap is None:
        raise UsageError("mergecap is not installed (Debian package wireshark-common, which "
                         "tshark depends on; scripts/setup.sh installs it)")
    for p in pcaps:
        if not p.is_file():         # a FIFO would keep mergecap waiting forever
            raise UsageError(f"{p} is not a regular file; refusing to merge it")
    directory = safe_write.ensure_dir(out.parent)
    private = Path(tempfile.mkdtemp(prefix=".merge-", dir=directory))
    try:
        tmp = private / out.name
        run_checked([mergecap, "-w", str(tmp), *map(str, pcaps)], timeout=600,
                    what="merging the captures", error=RuntimeError)
        if (directory / out.name).is_dir() and not (directory / out.name).is_symlink():
            raise safe_write.UnsafePath(f"{out} is a directory; cannot write the capture there")
        os.replace(tmp, directory / out.name)
    finally:
        shutil.rmtree(private, ignore_errors=True)
    return out


def viewer_options(transport: str | None) -> list[str]:
    """Preferences the captures need: UDP checksum 0 is what RoCEv2 over IPv6 sends (the ICRC
    covers the packet), not an error; and which transport the packets are, when known."""
    opts = ["-o", "udp.ignore_ipv6_zero_checksum:TRUE"]
    if transport in ("mrc", "roce"):
        opts += ["-o", f"mrc.transport:{transport}"]
    return opts


def viewer_commands(capture: Path, transport: str | None = None) -> dict[str, list[str]]:
    lua = ["-X", f"lua_script:{DISSECTOR}", *viewer_options(transport)]
    return {"wireshark": ["wireshark", *lua, str(capture)],
            "tshark": ["tshark", *lua, "-r", str(capture)]}


def has_display() -> bool:
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def time_base(tdir: Path) -> tuple[float, float] | None:
    """(E0, k): the capture time (frame.time_epoch, wall-clock seconds) of t = 0 of every report
    (the transport's timed start, emulated) and its time scale k; emulated seconds from the
    timed start = (frame.time_epoch - E0) / k. None without a summary.json and clock.json."""
    import json

    from analysis.pcap import ClockOffset  # deferred: numpy/pandas, only for the time base
    try:
        summary = json.loads(read_regular(tdir / "summary.json", MAX_JSON_BYTES))
        clock = ClockOffset.load(tdir / "clock.json")
    except (OSError, ValueError, RecursionError):
        return None
    start, k = summary.get("timed_start_ns"), summary.get("time_scale") or 1.0
    if not isinstance(start, int) or not isinstance(k, (int, float)) or not k > 0:
        return None
    return (timescale.wall_ns(start, float(k)) + clock.offset_ns) / 1e9, float(k)


def time_base_lines(run_dir: Path, transport: str | None) -> list[str]:
    """How to read the captures on the reports' clock (wall time, emulated time = wall / k):
    per transport, t = 0 as frame.time_epoch and the editcap shift that puts it at 0."""
    lines = []
    for name, tdir in transport_dirs(run_dir).items():
        if transport not in (None, name) or (base := time_base(tdir)) is None:
            continue
        e0, k = base
        lines.append(f"time base:  {name}: t = 0 of the reports (its timed start) is "
                     f"frame.time_epoch {e0:.6f};")
        lines.append(f"            emulated s from t = 0 = (frame.time_epoch - {e0:.6f}) / {k:g}")
        lines.append(f"            shifted: editcap -t {-e0:.6f} IN OUT (then wall s from t = 0 = "
                     f"emulated s x {k:g})")
    return lines


def main(args) -> int:
    """`mrclab wireshark`: exit 0 (merged, one file per transport; opened or commands printed),
    2 on bad input, 1 when mergecap fails."""
    import sys

    try:
        run_dir = safe_write.check_run_dir(resolve_run(args.run))
    except OSError as err:          # missing, or a planted link, FIFO or nesting (UnsafePath)
        raise UsageError(str(err)) from None
    captures = run_captures(run_dir, args.transport)
    if args.merged_pcap and len(captures) > 1:
        raise UsageError(f"--merged-pcap names one file but {run_dir} has captures of "
                         f"{', '.join(captures)}: add --transport (each transport ran on its own "
                         f"fabric with the same addresses, so their packets are not merged)")
    outs = {name: Path(args.merged_pcap) if args.merged_pcap else
            run_dir / "analysis" / f"captures-{name}.pcapng" for name in captures}
    commands = {name: viewer_commands(out, name) for name, out in outs.items()}
    if args.print_only:
        for name, pcaps in captures.items():
            print(f"merge:      {shlex.join(['mergecap', '-w', str(outs[name]), *map(str, pcaps)])}")
            print(f"GUI:        {shlex.join(commands[name]['wireshark'])}")
            print(f"headless:   {shlex.join(commands[name]['tshark'])}")
        for line in time_base_lines(run_dir, args.transport):
            print(line)
        return 0
    for name, pcaps in captures.items():
        try:
            merge(pcaps, outs[name])
        except RuntimeError as err:
            print(f"mrclab wireshark: {err}", file=sys.stderr)
            return 1
        except OSError as err:           # e.g. a root-owned run directory, read by a normal user
            raise UsageError(f"cannot write the merged capture {outs[name]}: {err.strerror}; "
                             f"choose another file with --merged-pcap and --transport") from None
        print(f"merged {len(pcaps)} capture(s) of {name} in {run_dir} into {outs[name]}")
    for line in time_base_lines(run_dir, args.transport):    # the captures are wall-clock
        print(line)
    first = next(iter(captures))
    if has_display() and shutil.which("wireshark"):
        subprocess.Popen(commands[first]["wireshark"], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)      # outlives this command
        print(f"opened: {shlex.join(commands[first]['wireshark'])}")
        for name in list(captures)[1:]:
            print(f"GUI ({name}): {shlex.join(commands[name]['wireshark'])}")
        return 0
    why = ("no display (DISPLAY/WAYLAND_DISPLAY unset)" if not has_display()
           else "wireshark (the GUI, Debian package wireshark) is not installed")
    print(f"not opening Wireshark: {why}")
    for name in captures:
        print(f"GUI:        {shlex.join(commands[name]['wireshark'])}")
        print(f"headless:   {shlex.join(commands[name]['tshark'])}")
    print(f"            (add -V for every MRC field, or -Y 'mrc.retransmission == 1' for retransmissions)")
    return 0
