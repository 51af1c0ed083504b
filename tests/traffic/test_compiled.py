"""The compiled transport core: which build is in force (traffic/compiled.py), and that the
compiled and interpreted codecs write the same bytes. The transport's own unit tests run on
both builds (Makefile: the tests marked `core` again with MRCLAB_PURE_PYTHON=1)."""
import json
import os
import subprocess
import sys

import pytest

from traffic import compiled
from tests.helpers.paths import REPO as REPO_PATH

pytestmark = pytest.mark.core

REPO = str(REPO_PATH)


def fake_repo(tmp_path, edit: str | None = None):
    """A copy of the core's sources under tmp_path and a manifest built from the originals;
    `edit` names a module whose copy is changed after the 'build'."""
    digests = {}
    for module in compiled.MODULES:
        src = compiled.source_path(module, REPO)
        dst = tmp_path / os.path.relpath(src, REPO)
        dst.parent.mkdir(parents=True, exist_ok=True)
        text = open(src).read()
        dst.write_text(text)
        digests[module] = compiled.source_digest(module, REPO)
        if module == edit:
            dst.write_text(text + "\n# edited after the build\n")
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"interpreter": compiled.interpreter_tag(),
                                    "cython": "x", "modules": digests}))
    return str(manifest)


def test_a_build_of_the_current_sources_for_this_interpreter_is_used(tmp_path):
    manifest = fake_repo(tmp_path)
    use, why = compiled.usable_build(manifest, str(tmp_path))
    assert use and why.startswith("compiled")


def test_a_source_edited_after_the_build_runs_interpreted_and_is_named(tmp_path):
    manifest = fake_repo(tmp_path, edit="traffic.core.sender")
    use, why = compiled.usable_build(manifest, str(tmp_path))
    assert not use and "sender.py changed" in why


def test_a_build_for_another_interpreter_is_not_used(tmp_path):
    manifest = fake_repo(tmp_path)
    data = json.loads(open(manifest).read())
    data["interpreter"] = ".cpython-39-x86_64-linux-gnu.so"
    open(manifest, "w").write(json.dumps(data))
    use, why = compiled.usable_build(manifest, str(tmp_path))
    assert not use and "cpython-39" in why


@pytest.mark.parametrize("content", [None, "not json", "[]", '{"modules": {}}'])
def test_no_manifest_or_a_broken_one_means_interpreted(tmp_path, content):
    path = tmp_path / "manifest.json"
    if content is not None:
        path.write_text(content)
    use, why = compiled.usable_build(str(path), REPO)
    assert not use and why.startswith("interpreted")


def _loaded_in_child(env_pure: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k != compiled.ENV_PURE}
    if env_pure is not None:
        env[compiled.ENV_PURE] = env_pure
    code = ("import json, traffic.nic.endpoint, traffic.nic.packet_io, traffic.compiled as c; "
            "print(json.dumps({'active': c.active(), 'loaded': c.loaded(), "
            "'usable': c.usable_build()[0]}))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def test_the_environment_variable_selects_the_interpreted_modules():
    got = _loaded_in_child("1")
    assert got["active"] is False
    assert set(got["loaded"]) == set(compiled.MODULES)
    assert not any(got["loaded"].values())


def test_without_it_every_core_module_is_compiled_exactly_when_a_fresh_build_exists():
    got = _loaded_in_child(None)
    assert got["active"] == got["usable"]
    assert set(got["loaded"]) == set(compiled.MODULES)
    assert all(v == got["usable"] for v in got["loaded"].values())


def test_compiled_and_interpreted_codecs_write_the_same_frames():
    """Frames of every message kind, encoded by a child on the interpreted codec and by a child
    on the build in force, then decoded back: bytes equal. (Without a build both children run
    interpreted and this only checks determinism.)"""
    code = r"""
import json, sys
from model.topology import FabricSpec, Topology, make_ev
from traffic.core.codec import Codec
from traffic.core.messages import DataPacket, Sack, Nack, Probe
codec = Codec(Topology(FabricSpec()))
enc = codec.encoder(0, 2, 1, "srv6")
ev = make_ev(1, 1, 0x1234)
msgs = [DataPacket(dest_qp=0x200, psn=7, opcode=0xCB, msn=3, va=4096, rkey=0x11,
                   dma_len=5000, payload=bytes(range(256)) * 5, imm=9, timestamp=123456789,
                   ack_req=True, retransmit=True, ev=ev),
        Sack(dest_qp=0x100, cum_psn=40, bitmap=(1 << 63) | 5, sack_base=40, ev=ev, skip=1,
             mpr=2, port_status=3, echo_timestamp=99, ooo_count=4, rx_bytes=1 << 40,
             path_ev=ev),
        Nack(dest_qp=0x100, psn=41, reason=1, ev=ev, port_status=3, echo_timestamp=5,
             path_ev=ev),
        Probe(ev=ev, seq=77, timestamp=8, response=True, src_qp=0x100, port_status=1,
              path_ev=ev)]
frames = [enc.encode(m).hex() for m in msgs]
back = [type(codec.decode(bytes.fromhex(f))[0]).__name__ for f in frames]
print(json.dumps({"frames": frames, "back": back}))
"""
    outs = []
    for pure in ("1", None):
        env = {k: v for k, v in os.environ.items() if k != compiled.ENV_PURE}
        if pure:
            env[compiled.ENV_PURE] = pure
        outs.append(json.loads(subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env,
                                              check=True, capture_output=True,
                                              text=True).stdout))
    assert outs[0]["back"] == ["DataPacket", "Sack", "Nack", "Probe"]
    assert outs[0] == outs[1]
