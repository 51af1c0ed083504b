"""Skips that let `make unit` run as a normal user after one root `make setup`.

- Integration tests (tests/integration, or marked `integration`) build network namespaces and
  Open vSwitch bridges: as a normal user they skip with the reason; as root (CI) they run.
- Tests marked `needs_tshark` or `needs_chromium` skip when that program is not on PATH; under
  CI (CI set) a missing one is not skipped: the test runs and fails, since scripts/setup.sh
  installs both there.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.helpers.browser import CHROMIUM

INTEGRATION_DIR = Path(__file__).resolve().parent / "integration"

# marker -> the program its tests run (scripts/setup.sh installs each)
PROGRAMS = {"needs_tshark": "tshark", "needs_chromium": CHROMIUM}


def _is_integration(item) -> bool:
    return item.get_closest_marker("integration") is not None or \
        INTEGRATION_DIR in Path(str(item.path)).resolve().parents


def pytest_collection_modifyitems(config, items):
    not_root = os.geteuid() != 0
    missing = {} if os.environ.get("CI") else \
        {marker: program for marker, program in PROGRAMS.items() if shutil.which(program) is None}
    for item in items:
        if not_root and _is_integration(item):
            item.add_marker(pytest.mark.skip(
                reason="needs root (network namespaces, Open vSwitch, Mininet): "
                       "run `sudo make integration`"))
            continue
        for marker, program in missing.items():
            if item.get_closest_marker(marker) is not None:
                item.add_marker(pytest.mark.skip(
                    reason=f"{program} is not installed (`sudo make setup` installs it)"))


@pytest.fixture
def api_server():
    """start(controller, **ApiServer options): the controller's HTTP API (controller.api) for a
    FabricController the test built, on a free port with the tests' token
    (tests/helpers/api_token.py); every server started is stopped after the test."""
    from controller.api import ApiServer
    from tests.helpers.api_token import TOKEN
    servers = []

    def start(controller, **options):
        server = ApiServer(controller, 0, TOKEN, **options).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


FAILED_OUTCOMES = ("traceback", "accepted wrongly", "hang")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A hostile-corpus test that fails records its outcome too: a Hang (its deadline passed)
    is a hang, a failed assertion an input accepted wrongly, any other exception a traceback."""
    outcome = yield
    report = outcome.get_result()
    if (report.when == "call" and report.failed and call.excinfo is not None
            and item.module.__name__ == "tests.house.test_hostile_corpus"):
        kind = call.excinfo.typename
        verdict = ("hang" if kind == "Hang" else "accepted wrongly" if kind == "AssertionError"
                   else "traceback")
        item.module.OUTCOMES.append(("failed", item.name, verdict))


def pytest_terminal_summary(terminalreporter):
    """One line counting the hostile corpus's outcomes (tests/house/test_hostile_corpus.py),
    when it ran: how many inputs were tried, how many ended in a clear error or were handled,
    and how many in a traceback, were accepted wrongly, or hung (each should be 0)."""
    import sys
    module = sys.modules.get("tests.house.test_hostile_corpus")
    outcomes = getattr(module, "OUTCOMES", None)
    if not outcomes:
        return
    errors = sum(o == "clear error" for _, _, o in outcomes)
    handled = sum(o.startswith("handled") for _, _, o in outcomes)
    failed = {name: sum(o == name for _, _, o in outcomes) for name in FAILED_OUTCOMES}
    kinds = sorted({k for k, _, _ in outcomes if k != "failed"})
    terminalreporter.write_line(
        f"hostile corpus: {len(outcomes)} inputs tried ({', '.join(kinds)}), {errors} clear "
        f"errors, {handled} handled (the sound part read, the rest named), "
        f"{failed['traceback']} tracebacks, {failed['accepted wrongly']} accepted wrongly, "
        f"{failed['hang']} hangs")
