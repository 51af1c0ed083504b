"""run.json: what produced a run directory, so a result can be traced and repeated without the
person who ran it: mrclab's version and git commit, the scenario (text and fully resolved), the
machine (host, kernel, CPU, memory, Open vSwitch, Python and package versions), start and end
times, exit status and the console table as printed.

Written when the run starts and rewritten when it ends (RunRecord.finish), so an interrupted or
crashed run still says what it was. Reading the machine never fails the run: a fact that cannot
be read is recorded as None with the reason under "unavailable".
"""
from __future__ import annotations

import dataclasses
import json
import os
import platform
import socket
import subprocess
import sys
import time
import tomllib
from importlib import metadata
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
SCHEMA = 1
# the packages whose versions shape a result (pyproject.toml's pinned dependencies and the
# compiled core's compiler)
PACKAGES = ("mrclab", "numpy", "pandas", "scapy", "os-ken", "matplotlib", "isal", "cython",
            "pyarrow", "scipy")


def _command(argv: list[str], timeout_s: float = 10.0) -> str:
    """stdout of a short command; raises OSError / CalledProcessError / TimeoutExpired."""
    return subprocess.run(argv, capture_output=True, text=True, check=True,
                          timeout=timeout_s).stdout.strip()


def git_state(root: Path = REPO_ROOT) -> dict:
    """{"commit", "dirty", "error"}: the checkout's HEAD and whether tracked files differ from it.
    Not a git checkout (a copied tree, an sdist) or no git: commit and dirty None, error says
    why."""
    try:
        commit = _command(["git", "-C", str(root), "rev-parse", "HEAD"])
        dirty = bool(_command(["git", "-C", str(root), "status", "--porcelain",
                               "--untracked-files=no"]))
    except FileNotFoundError:
        return {"commit": None, "dirty": None, "error": "git is not installed"}
    except subprocess.CalledProcessError as exc:
        reason = (exc.stderr or "").strip().splitlines()
        return {"commit": None, "dirty": None,
                "error": f"not a git checkout ({reason[0] if reason else 'git failed'})"}
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"commit": None, "dirty": None, "error": f"git: {exc}"}
    return {"commit": commit, "dirty": dirty, "error": None}


def _cpu_model() -> str | None:
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return None


def _memory_bytes() -> int | None:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    return None


def _ovs_version() -> str | None:
    first = _command(["ovs-vswitchd", "--version"]).splitlines()
    return first[0].strip() if first else None


def machine() -> dict:
    """Host, kernel, CPU, memory, Open vSwitch, Python and package versions."""
    unavailable: dict[str, str] = {}

    def read(name, fn):
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001 - a fact we cannot read must not stop the run
            unavailable[name] = f"{exc.__class__.__name__}: {exc}"
            return None

    packages = {}
    for pkg in PACKAGES:
        try:
            packages[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            packages[pkg] = None
    uname = platform.uname()
    return {
        "hostname": socket.gethostname(),
        "kernel": f"{uname.system} {uname.release} {uname.version}",
        "machine": uname.machine,
        "cpu_model": read("cpu_model", _cpu_model),
        "cpu_count": os.cpu_count(),
        "memory_bytes": read("memory_bytes", _memory_bytes),
        "openvswitch": read("openvswitch", _ovs_version),
        "python": sys.version.split()[0],
        "python_executable": sys.executable,
        "packages": packages,
        "unavailable": unavailable,
    }


def time_scale(scn) -> float | str:
    """The emulated world's slowdown as the scenario declares it ([fabric] time_scale: a number,
    or "auto", which each transport resolves on its own), else 1."""
    value = getattr(scn, "time_scale", None)
    if value is None:
        try:
            value = tomllib.loads(scn.text).get("fabric", {}).get("time_scale")
        except tomllib.TOMLDecodeError:
            value = None
    return 1 if value is None else value


def resolved(scn) -> dict:
    """The scenario as the run used it: every default filled in, faults as controller commands."""
    def plain(value):
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
        if isinstance(value, dict):
            return {str(k): plain(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        if isinstance(value, Path):
            return str(value)
        return value
    out = plain(scn)
    out.pop("text", None)                  # kept once, under "scenario_text"
    return out


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(t))


class RunRecord:
    """run.json of one run directory: start() writes it, finish() completes it."""

    def __init__(self, run_dir: Path, scn, options: dict, scales: dict | None = None):
        self.path = Path(run_dir) / "run.json"
        self.started = time.time()
        self.data = {
            "schema": SCHEMA,
            "mrclab_version": _package_version("mrclab"),
            "git": git_state(),
            "options": options,                   # `mrclab run` as invoked
            "scenario": scn.name,
            "short": scn.short,
            "scenario_path": None if scn.path is None else str(scn.path),
            "scenario_text": scn.text,
            "scenario_resolved": resolved(scn),
            "time_scale": time_scale(scn),            # as declared: a number, or "auto"
            "time_scales": dict(scales or {}),        # the k each transport runs at
            "machine": machine(),
            "started": _iso(self.started),
            "ended": None,
            "duration_s": None,
            "exit_code": None,
            "status": "running",
            "console": None,
        }

    def write(self) -> None:
        tmp = self.path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.data, indent=2, default=str))
        tmp.replace(self.path)                 # never a half-written run.json

    def finish(self, exit_code: int | None, console: str | None, status: str) -> None:
        """status: "finished", "interrupted" or "crashed: <error>"."""
        ended = time.time()
        self.data.update(ended=_iso(ended), duration_s=round(ended - self.started, 3),
                         exit_code=exit_code, status=status, console=console)
        self.write()


def _package_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def start(run_dir: Path, scn, options: dict, scales: dict | None = None) -> RunRecord:
    """Write run.json for a run that is starting (status "running") and return its record.
    scales: the time scale each transport runs at ("auto" resolves one per transport)."""
    record = RunRecord(run_dir, scn, options, scales)
    record.write()
    return record
