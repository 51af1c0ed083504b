"""Which implementation of the transport core runs: the interpreted .py modules, or the same
modules compiled to C extensions by `make setup` (scripts/build_core.py, Cython, from these
very source files: there is one source of truth, the .py).

The compiled modules live in build/compiled/traffic/<sub-package>/ (never in git). The
__init__.py of traffic/core and traffic/nic puts that directory in front of the sub-package's
search path when all of these hold:
  * MRCLAB_PURE_PYTHON is not set to a non-empty value other than "0";
  * build/compiled/manifest.json exists, was built for this interpreter, and records for every
    compiled module the SHA-256 of the source it was built from, equal to the source now.
A source edited after the build therefore runs interpreted until the next `make setup`: a
stale extension never shadows newer code. Every decision is in `status()`.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import sysconfig

ENV_PURE = "MRCLAB_PURE_PYTHON"
# The per-packet work of the data path: codec, both QP halves and what they call per packet,
# and the endpoint's loop and per-frame glue (a loop turn costs about half the instructions
# compiled; the process starts through the uncompiled traffic/nic/endpoint_cli.py).
MODULES = (
    "traffic.core.codec", "traffic.core.messages", "traffic.core.rtt", "traffic.core.evs",
    "traffic.core.sender", "traffic.core.receiver", "traffic.core.nscc",
    "traffic.core.loss_policy", "traffic.core.work_requests", "traffic.core.reverse_paths",
    "traffic.core.qp_config", "traffic.core.memory", "traffic.core.roce_rc",
    "traffic.core.deadline_queue", "traffic.core.suspect_paths", "traffic.core.ev_probes",
    "traffic.core.path_order",
    "traffic.nic.endpoint", "traffic.nic.endpoint_support", "traffic.nic.packet_io",
    "traffic.nic.queue_pair", "traffic.nic.endpoint_probes",
)
# The per-frame classes compiled as extension types (scripts/extension_types.py says how and
# why): per module, in the order the module defines them (a base before its subclasses).
EXTENSION_CLASSES = {
    "traffic.core.work_requests": ("PostedWrites", "AssembledCompletions"),
    "traffic.core.sender": ("SenderQP",),
    "traffic.core.receiver": ("ReceiverQP",),
    "traffic.core.deadline_queue": ("DeadlineQueue",),
    "traffic.core.nscc": ("Nscc", "PlanePacer"),
    "traffic.core.reverse_paths": ("ReversePaths",),
    "traffic.core.codec": ("Encoder", "Codec"),
    "traffic.core.ev_probes": ("EVProbeSchedule",),
    "traffic.core.evs": ("EVSet",),
    "traffic.nic.queue_pair": ("QueuePair",),
    "traffic.nic.packet_io": ("PacketPort", "RingPort"),
    "traffic.nic.endpoint_support": ("EventLog", "Pacer", "LatenessHistogram", "Counters"),
    "traffic.nic.endpoint_probes": ("EndpointProbes",),
    "traffic.nic.endpoint": ("Endpoint",),
}
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD_DIR = os.path.join(REPO, "build", "compiled")
MANIFEST = os.path.join(BUILD_DIR, "manifest.json")

_state = {"active": False, "why": "not decided"}


def source_path(module: str, repo: str = REPO) -> str:
    return os.path.join(repo, *module.split(".")) + ".py"


def source_digest(module: str, repo: str = REPO) -> str:
    with open(source_path(module, repo), "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def interpreter_tag() -> str:
    """What an extension must have been built for: the interpreter's extension suffix."""
    return sysconfig.get_config_var("EXT_SUFFIX") or sys.implementation.cache_tag


def pure_requested() -> bool:
    return os.environ.get(ENV_PURE, "") not in ("", "0")


def usable_build(manifest_path: str = MANIFEST, repo: str = REPO) -> tuple[bool, str]:
    """(use it, why) for the build whose manifest is at manifest_path, against the sources
    under repo."""
    try:
        with open(manifest_path) as f:
            manifest = json.load(f)
    except FileNotFoundError:
        return False, "interpreted (no compiled build: run `make setup`)"
    except (OSError, ValueError) as e:
        return False, f"interpreted (unreadable {manifest_path}: {e})"
    if not isinstance(manifest, dict):
        return False, f"interpreted ({manifest_path} is not a build manifest)"
    if manifest.get("interpreter") != interpreter_tag():
        return False, (f"interpreted (compiled for {manifest.get('interpreter')}, this is "
                       f"{interpreter_tag()}: run `make setup`)")
    built = manifest.get("modules")
    built = built if isinstance(built, dict) else {}
    for module in MODULES:
        if built.get(module) is None:
            return False, f"interpreted ({module} not in the compiled build: run `make setup`)"
        try:
            fresh = built[module] == source_digest(module, repo)
        except OSError:
            fresh = False
        if not fresh:
            return False, (f"interpreted ({source_path(module, repo)} changed since it was "
                           f"compiled: run `make setup`)")
    return True, f"compiled (Cython {manifest.get('cython', '?')}, {len(MODULES)} modules)"


def search_path(package_path: list[str], package: str) -> list[str]:
    """A compiled sub-package's __path__ (traffic.core, traffic.nic): its directory in the
    compiled build first when the build may be used."""
    if pure_requested():
        _state.update(active=False, why=f"interpreted ({ENV_PURE} is set)")
        return package_path
    use, why = usable_build()
    _state.update(active=use, why=why)
    if not use:
        return package_path
    return [os.path.join(BUILD_DIR, *package.split(".")), *package_path]


def active() -> bool:
    """True when the compiled modules are in force for this process."""
    return _state["active"]


def status() -> str:
    """One line: which core is in force and why."""
    return _state["why"]


def loaded() -> dict[str, bool]:
    """module -> whether the imported module is the compiled one (for tests and benches)."""
    out = {}
    for module in MODULES:
        mod = sys.modules.get(module)
        if mod is not None:
            out[module] = not (getattr(mod, "__file__", "") or "").endswith(".py")
    return out
