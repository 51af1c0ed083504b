"""The hostile-input corpus: inputs a careless or hostile user can hand MRC lab, by class.

  scenarios/*.toml   scenario files, plus the generated ones below (too deep, too big, not files)
  RUN_DIR_CASES      damaged or planted run directories (links out, FIFOs, absurd records)
  CAPTURE_CASES      damaged captures (header only, cut, garbage, absurd lengths, odd names)
  API_CASES          requests to the controller API (no token, wrong type, bad bodies)

Every case must end in a clear error (exit 2, or an HTTP 4xx with a JSON error) or be handled
with the problem named, never a traceback, a hang or an unbounded read.
tests/house/test_hostile_corpus.py runs them and counts the outcomes (printed in the pytest
summary by tests/conftest.py).
"""
from __future__ import annotations

import json
import os
import struct
from pathlib import Path

from model.events import Event

HERE = Path(__file__).resolve().parent
SCENARIO_FILES = sorted((HERE / "scenarios").glob("*.toml"))

PCAP_HEADER = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)


def _record(ts_s: int, incl: int, orig: int, data: bytes) -> bytes:
    return struct.pack("<IIII", ts_s, 0, incl, orig) + data


# name -> (file name, bytes); each is loaded as the only capture of a transport directory
CAPTURE_CASES = {
    "empty file": ("h0-p0.pcap", b""),
    "header only (a run stopped at once)": ("h0-p0.pcap", PCAP_HEADER),
    "cut inside the header": ("h0-p0.pcap", PCAP_HEADER[:10]),
    "not a pcap (text)": ("h0-p0.pcap", b"hello, I am not a capture\n" * 4),
    "record longer than the file": ("h0-p0.pcap", PCAP_HEADER + _record(0, 1000, 1000, b"x" * 10)),
    "record length 2**31": ("h0-p0.pcap", PCAP_HEADER + _record(0, 2**31, 2**31, b"\0" * 64)),
    "zero-length record": ("h0-p0.pcap", PCAP_HEADER + _record(0, 0, 0, b"")),
    "garbage frame": ("h0-p0.pcap", PCAP_HEADER + _record(1, 60, 60, os.urandom(60))),
    "absurd timestamp": ("h0-p0.pcap", PCAP_HEADER + _record(0xFFFFFFFF, 60, 60, b"\0" * 60)),
    "odd name h0-p99999999999999999999": ("h0-p99999999999999999999.pcap", PCAP_HEADER),
    "odd name h99999999999999-p0": ("h99999999999999-p0.pcap", PCAP_HEADER),
    "big-endian header only": ("h0-p0.pcap", struct.pack(">IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0,
                                                         65535, 1)),
}


def _set_summary(key, value):
    def change(run_dir: Path):
        path = run_dir / "tcp" / "summary.json"
        s = json.loads(path.read_text())
        s[key] = value
        path.write_text(json.dumps(s))
    return change


def _append_log(line: str):
    def change(run_dir: Path):
        with open(run_dir / "tcp" / "worker-h0.jsonl", "a") as f:
            f.write(line + "\n")
    return change


def _replace(rel: str, make):
    def change(run_dir: Path):
        path = run_dir / rel
        if path.exists() or path.is_symlink():
            path.unlink()
        path.parent.mkdir(parents=True, exist_ok=True)
        make(path, run_dir)
    return change


# name -> (change applied to a good run directory, "error" (exit 2) or "handled" (exit 0 with
# the problem named in the output or report), text the output must contain)
RUN_DIR_CASES = {
    "analysis is a link out of the run": (
        _replace("analysis", lambda p, r: p.symlink_to(r.parent)), "error", "is a link"),
    "report.html is a link": (
        _replace("analysis/report.html", lambda p, r: p.symlink_to(r / "scenario.toml")),
        "handled", "report:"),
    "figures is a link inside the run": (
        _replace("analysis/figures", lambda p, r: p.symlink_to(r / "tcp")), "error", "is a link"),
    "a log links out of the run": (
        _replace("tcp/worker-h9.jsonl", lambda p, r: p.symlink_to("/etc/hostname")), "error",
        "outside the run directory"),
    "summary.json is a FIFO": (
        _replace("tcp/summary.json", lambda p, r: os.mkfifo(p)), "error", "not a regular file"),
    "a capture is a FIFO": (
        _replace("tcp/pcaps/h0-p0.pcap", lambda p, r: os.mkfifo(p)), "error",
        "not a regular file"),
    "summary.json nested 450 deep": (
        _replace("tcp/summary.json", lambda p, r: p.write_text("[" * 450 + "]" * 450)),
        "handled", "report:"),
    "summary problems is a number": (_set_summary("problems", 3), "handled", "report:"),
    "summary verified is a string": (_set_summary("verified", "yes"), "handled", "report:"),
    "summary iterations_planned is a list": (
        _set_summary("iterations_planned", [1]), "handled", "report:"),
    "goodput record at t_ns 2**62": (
        _append_log(json.dumps({"t_ns": 2**62, "host": "h0", "event": Event.GOODPUT,
                                "rx_bytes": 5})), "handled", "skipped"),
    "iteration record with a string iter": (
        _append_log(json.dumps({"t_ns": 5, "host": "h0", "event": Event.ITERATION, "iter": "x",
                                "start_ns": 1, "end_ns": 2})), "handled", "report:"),
    "log line nested 450 deep": (_append_log("[" * 450 + "]" * 450), "handled", "report:"),
    "a cut log line": (_append_log('{"t_ns": 7, "ev'), "handled", "report:"),
    "worker.json is a list": (
        _replace("tcp/worker.json", lambda p, r: p.write_text("[1, 2]")), "handled", "report:"),
    "scenario copy nested deep": (
        _replace("scenario.toml", lambda p, r: p.write_text("a = " + "[" * 450 + "]" * 450)),
        "handled", "report:"),
}


def _rewrite_log(host: str, edit):
    """Rewrite worker-<host>.jsonl record by record: edit(record) returns the record to write."""
    def change(run_dir: Path):
        path = run_dir / "tcp" / f"worker-{host}.jsonl"
        records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        path.write_text("".join(json.dumps(edit(r)) + "\n" for r in records))
    return change


def _iteration(index: int, **fields):
    def edit(r: dict) -> dict:
        if r.get("event") == Event.ITERATION and r.get("iter") == index:
            r = {**r, **fields}
            return {k: v for k, v in r.items() if v is not None}
        return r
    return edit


def _copy_log(src: str, dst: str):
    def change(run_dir: Path):
        (run_dir / "tcp" / f"worker-{dst}.jsonl").write_bytes(
            (run_dir / "tcp" / f"worker-{src}.jsonl").read_bytes())
    return change


def _set_worker(key, value):
    def change(run_dir: Path):
        path = run_dir / "tcp" / "worker.json"
        w = json.loads(path.read_text())
        w[key] = value
        path.write_text(json.dumps(w))
    return change


def remove_tree(top) -> None:
    """Remove a directory tree with an explicit stack: shutil.rmtree (and pytest's clean-up of
    old temporary directories, which uses it) recurses, and a 1,100-deep chain exhausts it."""
    stack, order = [str(top)], []
    while stack:
        d = stack.pop()
        order.append(d)
        with os.scandir(d) as entries:
            for e in entries:
                if e.is_dir(follow_symlinks=False):
                    stack.append(e.path)
                else:
                    os.unlink(e.path)
    for d in reversed(order):
        os.rmdir(d)


NESTED = "tcp/d"        # where _nested_dirs starts its chain (the test removes it afterwards)


def _nested_dirs(depth: int):
    def change(run_dir: Path):
        d = run_dir / "tcp"
        for _ in range(depth):          # one level at a time: os.makedirs recurses
            d = d / "d"
            os.mkdir(d)
    return change


def _sparse(rel: str, size: int):
    def change(run_dir: Path):
        with open(run_dir / rel, "r+b") as f:
            f.truncate(size)
    return change


RUN_DIR_CASES.update({
    "worker.json nested 100000 deep": (
        _replace("tcp/worker.json", lambda p, r: p.write_text("[" * 100000 + "]" * 100000)),
        "handled", "worker.json"),
    "an iteration that ends before it starts": (
        _rewrite_log("h0", _iteration(3, end_ns=1)), "handled", "before it starts"),
    "time_scale 1e308 in worker.json": (_set_worker("time_scale", 1e308), "handled",
                                        "time_scale must be at most"),
    "wrong = 5 beside verified = true": (
        _rewrite_log("h0", _iteration(3, wrong=5)), "handled", "verified beside wrong"),
    "a worker log replaced by another rank's": (_copy_log("h0", "h1"), "handled",
                                                "another host's record"),
    "a worker log with its host spoofed": (
        _rewrite_log("h2", lambda r: {**r, "host": "h3"}), "handled", "another host's record"),
    "1,100 nested directories": (_nested_dirs(1100), "error", "nested more than"),
    "a sparse 8 GiB worker log": (_sparse("tcp/worker-h0.jsonl", 8 << 30), "handled",
                                  "not read"),
    "a sparse 8 GiB summary.json": (_sparse("tcp/summary.json", 8 << 30), "handled", "not read"),
})


def generated_scenarios(tmp: Path) -> dict[str, str]:
    """name -> path of the scenarios that cannot be stored as files of the corpus."""
    base = SCENARIO_FILES[0].read_text().split("[[faults]]")[0]
    deep_arrays = tmp / "deep-arrays.toml"
    deep_arrays.write_text(base + "[options]\ncapture = " + "[" * 450 + "]" * 450 + "\n")
    deep_tables = tmp / "deep-tables.toml"
    deep_tables.write_text("x = " + "{a = " * 450 + "1" + "}" * 450 + "\n")
    big = tmp / "five-mb-name.toml"
    big.write_text('name = "' + "x" * 5_000_000 + '"\n')
    too_big = tmp / "two-mb-comment.toml"
    too_big.write_text("#" * (2 << 20) + "\n")
    fifo = tmp / "fifo.toml"
    os.mkfifo(fifo)
    return {"nested 450 arrays deep": str(deep_arrays), "nested 450 tables deep": str(deep_tables),
            "a 5 MB name": str(big), "a 2 MB file": str(too_big), "a FIFO": str(fifo),
            "/dev/zero": "/dev/zero", "a directory": str(tmp), "missing": str(tmp / "nope.toml")}


# (name, method, path, headers, body bytes, expected status); the token placeholder <T> is
# replaced by the server's token, <DIR> by the endpoint directory, which holds a link
# zero.sock -> /dev/zero and a regular file plain.sock (plant_in_endpoint_dir)
JSON = {"Content-Type": "application/json", "Authorization": "Bearer <T>"}


def plant_in_endpoint_dir(d: Path) -> None:
    (d / "zero.sock").symlink_to("/dev/zero")
    (d / "plain.sock").write_text("not a socket")
API_CASES = [
    ("no token", "POST", "/deny", {"Content-Type": "application/json"}, b'{"plane": 0}', 401),
    ("wrong token", "POST", "/deny", {**JSON, "Authorization": "Bearer nope"}, b'{"plane": 1}',
     401),
    ("token without Bearer", "GET", "/denylist", {"Authorization": "<T>"}, b"", 401),
    ("GET without token", "GET", "/faults", {}, b"", 401),
    ("form post (a web page)", "POST", "/deny",
     {**JSON, "Content-Type": "application/x-www-form-urlencoded"}, b"plane=0", 415),
    ("text/plain post", "POST", "/fault", {**JSON, "Content-Type": "text/plain"},
     b'{"action": "link_down", "a": "t0p0g0", "b": "t1p0s0"}', 415),
    ("no content type", "POST", "/deny", {"Authorization": "Bearer <T>"}, b'{"plane": 0}', 415),
    ("body nested 100000 deep", "POST", "/fault", JSON, b"[" * 100000 + b"]" * 100000, 400),
    ("not JSON", "POST", "/fault", JSON, b"{nope", 400),
    ("a list, not an object", "POST", "/fault", JSON, b"[1, 2]", 400),
    ("gray_loss 100.5 %", "POST", "/fault", JSON,
     b'{"action": "gray_loss", "a": "t0p0g0", "b": "t1p0s0", "percent": 100.5}', 400),
    ("gray_loss NaN %", "POST", "/fault", JSON,
     b'{"action": "gray_loss", "a": "t0p0g0", "b": "t1p0s0", "percent": NaN}', 400),
    ("clear of a fault never applied", "POST", "/fault", JSON,
     b'{"action": "gray_loss_clear", "a": "t0p0g0", "b": "t1p0s0"}', 400),
    ("a 5 MB node name", "POST", "/fault", JSON,
     b'{"action": "link_down", "a": "' + b"y" * 900_000 + b'", "b": "t1p0s0"}', 400),
    ("faults: an object, not a list", "POST", "/faults", JSON,
     b'{"action": "gray_loss", "a": "t0p0g0", "b": "t1p0s0", "percent": 1}', 400),
    ("faults: a list of numbers", "POST", "/faults", JSON, b"[1, 2]", 400),
    ("faults: a link_down among losses", "POST", "/faults", JSON,
     b'[{"action": "gray_loss", "a": "t0p0g0", "b": "t1p0s0", "percent": 1},'
     b' {"action": "link_down", "a": "t0p0g0", "b": "t1p0s1"}]', 400),
    ("hosts: the controller's own pid", "POST", "/hosts", JSON, b'{"h0": <PID>}', 400),
    ("hosts: pid 0", "POST", "/hosts", JSON, b'{"h0": 0}', 400),
    ("hosts: pid as a string", "POST", "/hosts", JSON, b'{"h0": "1"}', 400),
    ("endpoints: a root-only socket", "POST", "/endpoints", JSON,
     b'{"h1": "/root/root-only.sock"}', 400),
    ("endpoints: .. out of the directory", "POST", "/endpoints", JSON,
     b'{"h1": "<DIR>/../x.sock"}', 400),
    ("endpoints: a link in the directory to /dev/zero", "POST", "/endpoints", JSON,
     b'{"h1": "<DIR>/zero.sock"}', 400),
    ("endpoints: a regular file in the directory", "POST", "/endpoints", JSON,
     b'{"h1": "<DIR>/plain.sock"}', 400),
    ("deny: plane 7", "POST", "/deny", JSON, b'{"plane": 7}', 400),
    ("deny: a 900 KB reason", "POST", "/deny", JSON,
     b'{"plane": 0, "reason": "' + b"r" * 900_000 + b'"}', 400),
    ("deny: empty object", "POST", "/deny", JSON, b"{}", 400),
    ("unknown path", "GET", "/secrets", {"Authorization": "Bearer <T>"}, b"", 404),
]
