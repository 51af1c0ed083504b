"""Every name a module uses is defined: an import removed from one module, or a name left behind
by a move between modules, breaks only the code path that runs it (a fabric start, a fault), which
the unit tests may never reach. pyflakes finds it without running anything."""

import pytest
from pyflakes import api, messages, reporter
from tests.helpers.paths import REPO as ROOT

PACKAGES = ("model", "traffic", "controller", "analysis", "emulation")
FATAL = (messages.UndefinedName, messages.UndefinedLocal, messages.UndefinedExport)


class _Collect(reporter.Reporter):
    def __init__(self):
        self.found = []

    def flake(self, message):
        if isinstance(message, FATAL):
            self.found.append(str(message))

    def unexpectedError(self, filename, msg):
        self.found.append(f"{filename}: {msg}")

    def syntaxError(self, filename, msg, lineno, offset, text):
        self.found.append(f"{filename}:{lineno}: {msg}")


@pytest.mark.parametrize("path", sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_no_undefined_names(path):
    rep = _Collect()
    api.checkPath(str(path), rep)
    assert not rep.found, "\n".join(rep.found)


def test_the_check_finds_an_undefined_name(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def start():\n    return ControllerClient(port=1)\n")
    rep = _Collect()
    api.checkPath(str(bad), rep)
    assert len(rep.found) == 1 and "ControllerClient" in rep.found[0]
