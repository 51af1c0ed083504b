"""report.html as a reader's browser shows it: `mrclab analyze` on the two synthetic run
directories of tests/helpers/ (synth.make_run: mrc, roce and tcp with captures, EV states and
unreadable log lines; synthetic_run.make_run_dir: tcp through applied, refused and never-sent
faults, with the controller's log of those applied), the report loaded in headless Chromium
(tests/helpers/browser.py).

What a reader must get: every figure loaded and decoded, as wide as the page allows and no
wider, no text that is a raw Python value (nan, None, a dict's repr ...), and a page that does
not run off the side of a 1280-pixel window. Two tests break a copy of the page on purpose, so a
record that misses a broken figure or a printed value fails here too.

The browser tests are marked needs_chromium: skipped when Chromium is missing, except under CI,
where scripts/setup.sh installs it and a missing browser fails them (tests/conftest.py)."""
from __future__ import annotations

import html
import re

import pytest

from analysis import cli
from tests.helpers import browser
from tests.helpers.synth import make_run
from tests.helpers.synthetic_run import make_run_dir, write_controller_log

needs_chromium = pytest.mark.needs_chromium

RUNS = ("three transports", "faults")


@pytest.fixture(scope="module")
def analyzed(tmp_path_factory):
    """{run: analysis.cli.analyze's result} for both synthetic runs."""
    three = make_run(tmp_path_factory.mktemp("browser") / "demo-20260101", packets=120)
    faults, _ = make_run_dir(tmp_path_factory.mktemp("browser"))
    write_controller_log(faults / "tcp")
    return {"three transports": cli.analyze(three), "faults": cli.analyze(faults)}


@needs_chromium
@pytest.mark.parametrize("name", RUNS)
def test_every_figure_shows_and_no_raw_python_value(analyzed, name, tmp_path):
    res = analyzed[name]
    seen = browser.render(res["report"], tmp_path)
    assert len(seen.images) == len(res["figures"]) >= 5
    assert seen.broken_images() == []
    for img in seen.images:             # a figure, shrunk to the page at most, never cut
        assert img["naturalWidth"] > 300 and img["naturalHeight"] > 200, img["alt"]
        assert 300 < img["width"] <= seen.viewport_width, img["alt"]
    assert seen.raw == []
    assert seen.scroll_width <= seen.viewport_width     # no sideways scrolling of the page


def _cut(png: str) -> str:
    """Half a PNG, as a write or copy cut short leaves it: the browser shows its top rows."""
    return png[:len(png) // 2 // 4 * 4]


def _not_a_png(png: str) -> str:
    """Bytes no decoder reads as a picture (the same length)."""
    return "A" * len(png)


@needs_chromium
@pytest.mark.parametrize("damage", [_cut, _not_a_png], ids=["cut short", "not a PNG"])
def test_a_figure_the_reader_does_not_see_whole_is_caught(analyzed, tmp_path, damage):
    text = analyzed["three transports"]["report"].read_text()
    figure = re.search(r'<img alt="([^"]*)" src="data:image/png;base64,([A-Za-z0-9+/=]+)"', text)
    page = tmp_path / "report.html"
    page.write_text(text[:figure.start(2)] + damage(figure.group(2)) + text[figure.end(2):])
    seen = browser.render(page, tmp_path)
    assert [i["alt"] for i in seen.broken_images()] == [html.unescape(figure.group(1))]


# Each a value as Python, numpy or pandas prints it, where a reader wants words or a number.
PRINTED = ["nan", "None", "NaT", "True", "-inf", "{'opened': 33}", "['a', 'b']",
           "array([1, 2])", "Timestamp('2026-01-01 00:00:00')", "<bound method Run.name of x>",
           "dtype: float64", "np.float64(574.759319)", "<NA>"]
# The same letters inside words and numbers a report does print.
WORDS = ["nanoseconds", "Nonetheless", "infinite", "3.5 s", "1e-05", "true to the scale"]


@needs_chromium
def test_a_raw_python_value_on_the_page_is_caught_and_words_are_not(analyzed, tmp_path):
    text = analyzed["faults"]["report"].read_text()
    cells = "".join(f"<tr><td>{html.escape(t)}</td></tr>" for t in PRINTED + WORDS)
    hidden = "<p style='display:none'>None</p>"         # not shown: not read
    page = tmp_path / "report.html"
    page.write_text(text.replace("</body>", f"<table>{cells}</table>{hidden}</body>"))
    seen = browser.render(page, tmp_path)
    assert sorted(r["text"] for r in seen.raw) == sorted(PRINTED)
    assert {r["tag"] for r in seen.raw} == {"td"}


@pytest.mark.parametrize("text", PRINTED)
def test_the_pattern_reads_a_printed_value_as_raw(text):
    assert re.search(browser.RAW_VALUE, f"mean {text} ms")


@pytest.mark.parametrize("text", WORDS)
def test_the_pattern_leaves_words_alone(text):
    assert not re.search(browser.RAW_VALUE, text)
