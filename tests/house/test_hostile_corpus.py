"""Every input of the hostile corpus (tests/helpers/hostile_corpus) ends in a clear error or is
handled with its problem named: no traceback, no hang, no unbounded read, no error that quotes
more than ~80 characters of a value. The outcomes are counted and printed in the pytest summary
("hostile corpus: N inputs, ...", tests/conftest.py)."""
from __future__ import annotations

import json
import os
import re
import socket
import time

import pytest

from analysis import pcap
from controller.api import ApiServer
from controller.service import FabricController
from model.topology import FabricSpec, Topology
from tests.helpers import hostile_corpus as C
from tests.helpers.api_token import TOKEN
from tests.helpers.cli import run_mrclab as run
from tests.helpers.synthetic_run import make_run_dir

OUTCOMES: list[tuple[str, str, str]] = []     # (class, input, outcome): read by tests/conftest.py
LONGEST_QUOTE = 80 + 5


def record(kind: str, name: str, outcome: str) -> None:
    OUTCOMES.append((kind, name, outcome))


def assert_concise(text: str) -> None:
    """No traceback, and no quoted value longer than the clip (plus its quotes and '...')."""
    assert "Traceback" not in text
    for quoted in re.findall(r"'([^']*)'|\"([^\"]*)\"", text):
        value = quoted[0] or quoted[1]
        assert len(value) <= LONGEST_QUOTE or "/" in value, value[:120]


# ---------------------------------------------------------------- scenarios


@pytest.mark.parametrize("path", C.SCENARIO_FILES, ids=lambda p: p.stem)
def test_a_corpus_scenario_is_a_clear_error(capsys, path):
    rc, out, err = run(capsys, "run", str(path), "--validate-only")
    assert rc == 2, (out, err)
    assert err.startswith("mrclab run: ") and len(err.strip().splitlines()) == 1
    assert_concise(err)
    record("scenario", path.stem, "clear error")


GENERATED = ["nested 450 arrays deep", "nested 450 tables deep", "a 5 MB name", "a 2 MB file",
             "a FIFO", "/dev/zero", "a directory", "missing"]


@pytest.mark.parametrize("name", GENERATED)
def test_a_generated_scenario_is_a_clear_error(capsys, tmp_path, name):
    path = C.generated_scenarios(tmp_path)[name]
    t0 = time.monotonic()
    rc, out, err = run(capsys, "run", path, "--validate-only")
    assert time.monotonic() - t0 < 20          # no read to the end of /dev/zero, no FIFO wait
    assert rc == 2, (out[:300], err[:300])
    assert len(err) < 2100
    assert_concise(err)
    record("scenario", name, "clear error")


# ---------------------------------------------------------------- run directories


@pytest.mark.parametrize("name", list(C.RUN_DIR_CASES))
def test_a_corpus_run_directory_is_refused_or_handled(capsys, tmp_path, name):
    change, expected, text = C.RUN_DIR_CASES[name]
    run_dir, _ = make_run_dir(tmp_path)
    outside = sorted(os.listdir(tmp_path))
    change(run_dir)
    rc, out, err = run(capsys, "analyze", str(run_dir))
    assert_concise(err)
    if expected == "error":
        assert rc == 2 and text in err, (rc, err[-500:])
        record("run directory", name, "clear error")
    else:
        assert rc == 0, err[-2000:]
        report = run_dir / "analysis" / "report.html"
        assert not report.is_symlink() and report.is_file()
        assert text in out + report.read_text()
        record("run directory", name, "handled, problem named")
    assert sorted(os.listdir(tmp_path)) == outside      # nothing written beside the run


# ---------------------------------------------------------------- captures


@pytest.mark.parametrize("name", list(C.CAPTURE_CASES))
def test_a_corpus_capture_is_reported_not_raised(tmp_path, name):
    filename, data = C.CAPTURE_CASES[name]
    (tmp_path / "tcp").mkdir()
    (tmp_path / "tcp" / filename).write_bytes(data)
    df = pcap.load_captures(tmp_path)
    reports = [r for r in df.attrs["pcap_reports"]
               if str((r if isinstance(r, dict) else vars(r)).get("path", "")).endswith(filename)]
    assert len(reports) == 1
    rep = reports[0]
    problems = rep.get("problems") if isinstance(rep, dict) else getattr(rep, "problems", [])
    packets = rep.get("mrc_packets") if isinstance(rep, dict) else getattr(rep, "mrc_packets", 0)
    assert packets == 0 and len(df) == 0
    for p in problems or []:
        assert_concise(str(p))
    record("capture", name, "handled, problem named" if problems else "handled, no packets")


# ---------------------------------------------------------------- API requests

TOPO = Topology(FabricSpec(planes=2, groups=2, spines=1, hosts_per_group=2))


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    d = tmp_path_factory.mktemp("endpoints")
    argvs = []
    ctl = FabricController(TOPO, "srv6", None, None, run=lambda argv: argvs.append(argv) or "",
                           endpoint_dir=str(d))
    server = ApiServer(ctl, 0, TOKEN, request_timeout_s=2.0).start()
    yield server.port, ctl, argvs, d
    server.stop()


def raw(port: int, method: str, path: str, headers: dict, body: bytes):
    head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    head += f"Content-Length: {len(body)}\r\n\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=20) as s:
        s.sendall(head.encode() + body)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    status = int(data.split(b" ", 2)[1])
    return status, json.loads(data.split(b"\r\n\r\n", 1)[1])


@pytest.mark.parametrize("case", C.API_CASES, ids=lambda c: c[0])
def test_a_corpus_request_is_a_clear_error_and_changes_nothing(api, case):
    port, ctl, argvs, d = api
    name, method, path, headers, body, status = case
    headers = {k: v.replace("<T>", TOKEN) for k, v in headers.items()}
    body = body.replace(b"<PID>", str(os.getpid()).encode()).replace(b"<DIR>", str(d).encode())
    got, reply = raw(port, method, path, headers, body)
    assert got == status, reply
    assert reply["ok"] is False and len(reply["error"]) <= 2000
    assert_concise(reply["error"])
    assert argvs == [] and ctl.denylist_state()["rules"] == [] and ctl.faults() == []
    assert ctl.denylist_state()["endpoints"] == {} and ctl.host_namespaces == {}
    record("API request", name, "clear error")
