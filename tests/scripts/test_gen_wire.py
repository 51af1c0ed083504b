"""The files generated from the wire table (scripts/gen_wire.py) are committed as the table
makes them: the trimmer's C header and the Lua dissector's generated block are regenerated in
memory and compared with the repository's copies."""
from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import gen_wire  # noqa: E402

from model import wire  # noqa: E402


def test_committed_generated_files_match_the_table():
    differ = gen_wire.stale(ROOT)
    assert not differ, ("generated from model/wire.py but differ from it; run "
                        "`python scripts/gen_wire.py`: "
                        + ", ".join(str(p.relative_to(ROOT)) for p in differ))


def _copy(tmp_path: Path) -> Path:
    for rel in (gen_wire.C_HEADER, gen_wire.LUA_FILE):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / rel, tmp_path / rel)
    return tmp_path


@pytest.mark.parametrize("rel,old,new", [
    (gen_wire.C_HEADER, "#define ROCE_UDP_PORT 4791", "#define ROCE_UDP_PORT 4792"),
    (gen_wire.LUA_FILE, "  SACK = 0xDC,", "  SACK = 0xDB,"),
    (gen_wire.LUA_FILE, "rx_bytes = { off = 40, len = 8 }", "rx_bytes = { off = 41, len = 8 }"),
])
def test_a_hand_edit_of_a_generated_line_is_found(tmp_path, rel, old, new):
    root = _copy(tmp_path)
    path = root / rel
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))
    assert gen_wire.stale(root) == [path]


def test_the_lua_text_outside_the_block_is_left_alone(tmp_path):
    root = _copy(tmp_path)
    path = root / gen_wire.LUA_FILE
    path.write_text("-- hand-written above\n" + path.read_text() + "-- and below\n")
    assert gen_wire.stale(root) == []


def test_the_c_header_carries_the_table_values():
    text = gen_wire.render_c_header()
    defines = dict(re.findall(r"#define (\w+) (\S+)", text))
    assert defines["ROCE_UDP_PORT"] == "4791"
    assert defines["OP_WRITE_FIRST"] == "0xC6" and defines["OP_WRITE_ONLY_IMM"] == "0xCB"
    assert defines["RETH_LEN"] == "16" and defines["BTH_LEN"] == "12"
    assert defines["DSCP_TRIMMED"] == "0x3B" and defines["ECN_CE"] == "3"
    assert int(defines["METH_LEN"]) == wire.METH.size


def test_trim_c_includes_the_header_and_make_rebuilds_on_it():
    bpf = ROOT / "emulation" / "network" / "bpf"
    assert '#include "mrc_wire.h"' in (bpf / "trim.c").read_text()
    rule = re.search(r"^build/trim\.o:(.*)$", (bpf / "Makefile").read_text(), re.MULTILINE)
    assert rule and "mrc_wire.h" in rule.group(1).split()
