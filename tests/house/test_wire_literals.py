"""Wire numbers are written once, in the wire table (model/wire.py): no other shipped source
(.py, .lua, .c, .h) spells an MRC opcode, the RoCEv2 UDP port or a bare EV bit shift in code.

A number retyped in a second place keeps working on its own bytes after the table changes,
which is how copies of a layout drift apart. Comments and string literals may name the
numbers (documentation, error messages); code must take them from the table, or, in C and
Lua, from the files generated from it (emulation/network/bpf/mrc_wire.h, the GENERATED block of
analysis/wireshark/mrc.lua), which are exempt.
"""
from __future__ import annotations

import io
import re
import sys
import tokenize
from pathlib import Path

import pytest

from model import wire

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ("model", "traffic", "controller", "analysis", "emulation", "scripts")
SUFFIXES = {".py", ".lua", ".c", ".h"}
TABLE = ROOT / "model" / "wire.py"
sys.path.insert(0, str(ROOT / "scripts"))
import gen_wire  # noqa: E402

GENERATED = {ROOT / gen_wire.C_HEADER}
LUA_BLOCK = (gen_wire.LUA_BEGIN, gen_wire.LUA_END)

_OPCODES = "|".join(f"{op:02X}" for op in wire.Opcode)
# The EV's bit fields that do not sit on a byte boundary: a shift by a multiple of 8 is a plain
# byte split, used everywhere for other reasons.
_EV_SHIFTS = "|".join(sorted({str(f.shift) for f in wire.EV.fields if f.shift % 8}))
RULES = (
    ("MRC opcode", re.compile(rf"\b0x(?:{_OPCODES})\b", re.IGNORECASE)),
    ("RoCEv2 UDP port", re.compile(rf"\b(?:{wire.ROCE_UDP_PORT}|0x0*{wire.ROCE_UDP_PORT:X})\b",
                                   re.IGNORECASE)),
    ("EV bit shift", re.compile(rf"(?:>>|<<)\s*(?:{_EV_SHIFTS})\b"
                                rf"|\b[lr]shift\s*\([^,()]+,\s*(?:{_EV_SHIFTS})\s*\)")),
)


def _fstring_code(token: str) -> list[bool]:
    """Per character of an f-string token: True inside a replacement field ({...}), which is
    code; the literal text around it is not."""
    keep, depth, i = [False] * len(token), 0, 0
    while i < len(token):
        ch = token[i]
        if depth == 0 and token.startswith(("{{", "}}"), i):
            i += 2
            continue
        if ch == "{":
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
        elif depth:
            keep[i] = True
        i += 1
    return keep


def _python_code(text: str) -> str:
    """The source with comments and string literals blanked; the expressions inside an
    f-string's braces are code and stay."""
    out = [list(line) for line in text.splitlines(keepends=True)]
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type not in (tokenize.COMMENT, tokenize.STRING):
            continue
        prefix = re.match(r"[A-Za-z]*", tok.string).group(0).lower()
        keep = _fstring_code(tok.string) if "f" in prefix else [False] * len(tok.string)
        (r, c), k = tok.start, 0
        for ch in tok.string:
            if ch == "\n":
                r, c = r + 1, 0
            else:
                if not keep[k]:
                    out[r - 1][c] = " "
                c += 1
            k += 1
    return "".join("".join(row) for row in out)


_C_NOISE = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"', re.DOTALL)
_LUA_NOISE = re.compile(r'--\[\[.*?\]\]|--[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'',
                        re.DOTALL)


def _blank(match: re.Match) -> str:
    return re.sub(r"[^\n]", " ", match.group(0))


def code_of(path: Path, text: str) -> str:
    """What the compiler sees of `path`: comments, strings and generated parts blanked, line
    numbers kept."""
    if path.suffix == ".py":
        return _python_code(text)
    if path.suffix == ".lua":
        begin, end = text.find(LUA_BLOCK[0]), text.find(LUA_BLOCK[1])
        if 0 <= begin < end:
            text = text[:begin] + re.sub(r"[^\n]", " ", text[begin:end]) + text[end:]
        return _LUA_NOISE.sub(_blank, text)
    return _C_NOISE.sub(_blank, text)


def literals(path: Path, text: str) -> list[str]:
    found = []
    for n, line in enumerate(code_of(path, text).splitlines(), start=1):
        for what, rule in RULES:
            for m in rule.finditer(line):
                found.append(f"{path.relative_to(ROOT)}:{n}: {what} {m.group(0)!r}")
    return found


def _shipped():
    for top in SHIPPED:
        for path in sorted((ROOT / top).rglob("*")):
            if path.suffix in SUFFIXES and path.is_file() and path != TABLE \
                    and path not in GENERATED and "build" not in path.relative_to(ROOT).parts:
                yield path


@pytest.mark.parametrize("path", list(_shipped()), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_wire_number_outside_the_table(path):
    found = literals(path, path.read_text(encoding="utf-8"))
    assert not found, ("take these from model/wire.py (C: mrc_wire.h, Lua: the generated "
                       "block W):\n" + "\n".join(found))


@pytest.mark.parametrize("suffix,code", [
    (".py", "if opcode == 0xdc:\n"), (".py", "port = 4791\n"), (".py", "p = ev >> 28\n"),
    (".py", "spine = (ev>>22) & 63\n"), (".py", "x = f'{ev >> 28}'\n"),
    (".c", "if (op == 0xC6) return 0;\n"), (".c", "x = htons(4791);\n"),
    (".lua", "local p = bit32.rshift(ev, 28)\n"), (".lua", "if opcode == 0xDE then end\n"),
])
def test_the_rules_find_a_literal(suffix, code):
    assert literals(ROOT / f"example{suffix}", code)


@pytest.mark.parametrize("suffix,code", [
    (".py", "# opcode 0xDC, UDP 4791, ev >> 28\n"), (".py", 'msg = "UDP 4791 (0xC6..0xCB)"\n'),
    (".py", "x = y >> 16\n"), (".py", "ethertype = 0x86DD\n"),
    (".c", "// UDP 4791\n/* 0xDC */ x = 1;\n"), (".lua", "-- 0xDC and 4791\nlocal s = '0xDD'\n"),
])
def test_comments_and_strings_may_name_them(suffix, code):
    assert not literals(ROOT / f"example{suffix}", code)
