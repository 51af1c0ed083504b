"""Argument types of the `mrclab` command line: each rejects bad input with a message that
names the expected value, so argparse answers "error: argument --x: ..." (exit 2) instead of a
traceback deep inside a subcommand."""
from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path


class UsageError(Exception):
    """Bad input found after parsing (e.g. a file that exists but is not a capture); the CLI
    prints it as `mrclab <command>: <message>` and exits 2."""


def _number(text: str, kind=float):
    try:
        value = kind(text)
    except ValueError:
        noun = "an integer" if kind is int else "a number"
        raise argparse.ArgumentTypeError(f"expected {noun}, got {text!r}") from None
    if kind is float and not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def positive_int(text: str) -> int:
    value = _number(text, int)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def nonneg_int(text: str) -> int:
    value = _number(text, int)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def positive_float(text: str) -> float:
    value = _number(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def nonneg_float(text: str) -> float:
    value = _number(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value


def percent(text: str) -> float:
    value = _number(text)
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"must be a percentage in [0, 100], got {text}")
    return value


def fraction(text: str) -> float:
    value = _number(text)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be a fraction in (0, 1], got {text}")
    return value


def tcp_port(text: str) -> int:
    value = _number(text, int)
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be a TCP port in 1..65535, got {value}")
    return value


def existing_file(text: str) -> Path:
    path = Path(text)
    if not path.exists():
        raise argparse.ArgumentTypeError(f"no such file: {text}")
    if not path.is_file():
        raise argparse.ArgumentTypeError(f"not a regular file: {text}")
    return path


def finite_float(text: str) -> float:
    """Any finite number; the range is checked by whoever owns the meaning (e.g. the controller)."""
    return _number(text)


def bounded_float(lo: float, hi: float, *, lo_open: bool = False):
    """An argument type for a number in [lo, hi] (lo excluded with lo_open): the range is checked
    on the command line, before anything is sent (the same bounds the receiver enforces)."""
    def parse(text: str) -> float:
        value = _number(text)
        if value < lo or value > hi or (lo_open and value == lo):
            low = f"({lo}" if lo_open else f"[{lo}"
            raise argparse.ArgumentTypeError(f"must be in {low}, {hi}], got {text}")
        return value
    parse.__name__ = "number"
    return parse


def bounded_int(lo: int, hi: int):
    """An argument type for an integer in lo..hi."""
    def parse(text: str) -> int:
        value = _number(text, int)
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"must be an integer in {lo}..{hi}, got {value}")
        return value
    parse.__name__ = "integer"
    return parse


class _Renamed(argparse.Action):
    """An option that was renamed: using it is an error naming the option to use instead."""

    def __init__(self, option_strings, dest, new: str = "", **kwargs):
        self.new = new
        super().__init__(option_strings, dest=argparse.SUPPRESS, nargs="?",
                         default=argparse.SUPPRESS, help=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        parser.error(f"{option_string} was renamed: use {self.new}")


def add_renamed(parser: argparse.ArgumentParser, old: str, new: str) -> None:
    """Refuse the old spelling `old` of an option with a message naming `new` (one spelling per
    concept: a silently accepted alias would keep both alive in scripts and docs)."""
    parser.add_argument(old, action=_Renamed, new=new)


class _Deprecated(argparse.Action):
    """An option kept under its old name for scripts: it sets the new option's value and says
    on stderr which name to use. Hidden from --help, so documents and new scripts learn one."""

    def __init__(self, option_strings, dest, new: str = "", **kwargs):
        self.new = new
        super().__init__(option_strings, dest=dest, help=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"{parser.prog}: {option_string} is deprecated: use {self.new}", file=sys.stderr)
        setattr(namespace, self.dest, values)


def add_deprecated(parser: argparse.ArgumentParser, old: str, new: str) -> None:
    """Accept the old spelling `old` of the option `new` (same value, a warning naming `new`):
    for an option whose old name scripts already use; add_renamed refuses one outright."""
    dest = new.lstrip("-").replace("-", "_")
    parser.add_argument(old, action=_Deprecated, new=new, dest=dest)


def print_to_pipe(text: str) -> int:
    """Print text to stdout; a reader that closed the pipe early (`| head`) ends the command
    quietly with 0 instead of a BrokenPipeError traceback."""
    try:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        # Python would flush stdout again at exit and fail once more: point it at /dev/null.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0
