"""Every input of the hostile corpus (tests/helpers/hostile_corpus) ends in a clear error or is
handled with its problem named: no traceback, no hang, no unbounded read, no error that quotes
more than ~80 characters of a value. The outcomes are counted and printed in the pytest summary
("hostile corpus: N inputs, ...", tests/conftest.py)."""
from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import time
from pathlib import Path

import pytest

from analysis import pcap
from controller.api import ApiServer
from controller.service import FabricController
from model.topology import FabricSpec, Topology
from tests.helpers import hostile_corpus as C
from tests.helpers.hostile_corpus import tools as T
from tests.helpers.api_token import TOKEN
from tests.helpers.cli import run_mrclab as run
from tests.helpers.synthetic_run import make_run_dir

OUTCOMES: list[tuple[str, str, str]] = []     # (class, input, outcome): read by tests/conftest.py
LONGEST_QUOTE = 80 + 5


def record(kind: str, name: str, outcome: str) -> None:
    OUTCOMES.append((kind, name, outcome))


class Hang(Exception):
    """An input kept a command busy past its deadline (a FIFO read, an endless loop)."""


@contextlib.contextmanager
def deadline(seconds: int):
    """Raise Hang in the test when the body takes longer than `seconds` (SIGALRM interrupts a
    blocking open() or read() of a FIFO too)."""
    def alarm(signum, frame):
        raise Hang(f"still running after {seconds} s")
    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


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
    try:
        with deadline(120):
            rc, out, err = run(capsys, "analyze", str(run_dir))
    finally:
        if (run_dir / C.NESTED).is_dir():
            C.remove_tree(run_dir / C.NESTED)
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
    C.plant_in_endpoint_dir(d)
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


# ---------------------------------------------------------------- the tools around a run


def _analyze_handled(capsys, run_dir: Path, kind: str, name: str, expected: str, text: str):
    with deadline(180):
        rc, out, err = run(capsys, "analyze", str(run_dir))
    assert_concise(err)
    if expected == "error":
        assert rc == 2 and text in err, (rc, err[-500:])
        record(kind, name, "clear error")
        return
    assert rc == 0, err[-2000:]
    report = (run_dir / "analysis" / "report.html").read_text()
    assert text in out + report, out[-1000:]
    record(kind, name, "handled, problem named")


@pytest.mark.parametrize("name", list(T.CAPTURE_RUN_CASES))
def test_a_corpus_capture_in_a_whole_run_is_named_not_raised(capsys, tmp_path, name):
    from tests.helpers.synth import make_run
    change, expected, text = T.CAPTURE_RUN_CASES[name]
    run_dir = tmp_path / "run"
    make_run(run_dir)
    change(run_dir)
    _analyze_handled(capsys, run_dir, "run with captures", name, expected, text)


@pytest.mark.parametrize("name", list(T.SWEEP_CASES))
def test_a_corpus_sweep_is_a_clear_error(capsys, tmp_path, name):
    make, text = T.SWEEP_CASES[name]
    path = make(tmp_path)
    with deadline(30):
        rc, out, err = run(capsys, "sweep", path, "--validate-only")
    assert rc == 2 and text in err, (rc, out[-300:], err[-500:])
    assert err.startswith("mrclab sweep: ") and len(err) < 2100
    assert_concise(err)
    record("sweep file", name, "clear error")


@pytest.fixture
def two_runs(tmp_path):
    run_a, _ = make_run_dir(tmp_path / "a")
    run_b = tmp_path / "b" / run_a.name
    shutil.copytree(run_a, run_b)
    return run_a, run_b


@pytest.mark.parametrize("name", list(T.COMPARE_CASES))
def test_a_corpus_compare_is_a_clear_error_and_writes_through_no_link(capsys, two_runs, name):
    run_a, run_b = two_runs
    change, expected, text = T.COMPARE_CASES[name]
    change(run_b)
    planted = run_b / "scenario.toml"
    before = planted.read_bytes() if planted.is_file() else None
    with deadline(60):
        rc, out, err = run(capsys, "compare", str(run_a), str(run_b))
    assert_concise(err)
    if planted.is_file():
        assert planted.read_bytes() == before          # not overwritten through a link
    assert not (run_a.parent.parent / "analysis").exists()
    if expected == "error":
        assert rc == 2 and text in err, (rc, err[-500:])
        record("compare", name, "clear error")
    else:
        assert rc == 0 and text in out, (rc, err[-500:])
        assert not (run_b / "analysis" / "compare.png").is_symlink()
        record("compare", name, "handled, problem named")


@pytest.mark.skipif(shutil.which("mergecap") is None, reason="mergecap is not installed")
@pytest.mark.parametrize("name", list(T.WIRESHARK_CASES))
def test_a_corpus_wireshark_run_is_refused_or_merged_through_no_link(capsys, tmp_path,
                                                                   monkeypatch, name):
    from tests.helpers.synth import make_run
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    change, expected, text = T.WIRESHARK_CASES[name]
    run_dir = tmp_path / "run"
    make_run(run_dir)
    scenario = (run_dir / "scenario.toml").read_bytes() if (run_dir / "scenario.toml").exists() \
        else None
    change(run_dir)
    with deadline(60):
        rc, out, err = run(capsys, "wireshark", str(run_dir))
    assert_concise(err)
    if scenario is not None:
        assert (run_dir / "scenario.toml").read_bytes() == scenario
    if expected == "error":
        assert rc == 2 and text in err, (rc, err[-500:])
        record("wireshark", name, "clear error")
    else:
        merged = run_dir / "analysis" / "captures-mrc.pcapng"
        assert rc == 0 and text in out and merged.is_file() and not merged.is_symlink(), err
        record("wireshark", name, "handled, problem named")


@pytest.mark.parametrize("name", list(T.LATEST_CASES))
def test_analyze_latest_picks_a_finished_run(capsys, tmp_path, monkeypatch, name):
    run_dir, _ = make_run_dir(tmp_path / "results")
    os.utime(run_dir, (1, 1))                          # the finished run is the oldest entry
    T.LATEST_CASES[name](tmp_path / "results")
    monkeypatch.setenv("MRCLAB_RESULTS_DIR", str(tmp_path / "results"))   # where `latest` looks
    with deadline(120):
        rc, out, err = run(capsys, "analyze", "latest")
    assert rc == 0 and str(run_dir.name) in out, (rc, err[-500:])
    record("analyze latest", name, "handled, problem named")


def test_a_notebook_parameter_of_the_wrong_kind_is_a_clear_error(capsys, tmp_path):
    run_dir, _ = make_run_dir(tmp_path)
    with deadline(60):
        rc, out, err = run(capsys, "notebook", str(run_dir), "-p", "BIN_MS", "abc")
    assert rc == 2 and "BIN_MS is a number" in err, err[-500:]
    assert "\x1b" not in err
    assert_concise(err)
    record("notebook", "-p BIN_MS abc", "clear error")


def test_a_module_planted_in_the_run_directory_is_not_imported_by_the_notebook(capsys,
                                                                              tmp_path):
    run_dir, _ = make_run_dir(tmp_path)
    marker = tmp_path / "planted-code-ran"
    (run_dir / "matplotlib.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    with deadline(400):
        rc, out, err = run(capsys, "notebook", str(run_dir))
    assert not marker.exists(), "the notebook's kernel imported matplotlib.py from the run"
    assert rc in (0, 1), err[-500:]
    record("notebook", "a matplotlib.py planted in the run", "handled, problem named")
