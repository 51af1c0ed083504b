"""Figures, report and their words as a reader meets them, on tests/helpers/synthetic_run.py's
tcp run: 4 hosts in 2 groups running a ring all-reduce, each host delivering 1e6 B/s from the
timed start except during the outage [1.0, 1.4) s; applied faults: an uplink of group 0 down at
1.0 s, up at 2.7 s, another uplink of group 0 down at 3.5 s (times after the timed start).

The report's structure is read with the standard library's HTML parser and its pictures with
Pillow: every <img> is an embedded PNG that decodes to a picture, captions are words, cells carry
no Python value (tests/analysis/test_report_browser.py loads it in headless Chromium)."""
from __future__ import annotations

import base64
import io
import re
from html.parser import HTMLParser

import matplotlib.pyplot as plt
import numpy as np
import pytest
from PIL import Image

from analysis import metrics as m
from analysis import plots, report
from analysis.plots_common import TRANSPORT_COLORS
from tests.helpers.synthetic_run import make_run_dir, write_controller_log


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    run_dir, _ = make_run_dir(tmp_path_factory.mktemp("reader"))
    write_controller_log(run_dir / "tcp")
    return m.load_run(run_dir)


def _rolling(ax, name):
    lines = [ln for ln in ax.lines if ln.get_color() == TRANSPORT_COLORS[name]
             and ln.get_linestyle() == "-"]
    return max(lines, key=lambda ln: ln.get_linewidth())


def test_goodput_reads_100_percent_of_allowed_after_an_uplink_the_ring_did_not_fill(run):
    """The ring crosses group 0's four uplinks once each way, so one of them down leaves its
    top rate (the hosts' NIC ports) whole: the same delivery rate before and after the outage
    is 100% of what the fabric allows, not the 133% of a capacity-only "allowed" (3 of 4)."""
    ax = plots.goodput_figure(run).axes[0]
    x = np.asarray(_rolling(ax, "tcp").get_xdata(), float)
    y = np.asarray(_rolling(ax, "tcp").get_ydata(), float)
    after = y[(x > 1.5) & (x < 2.5) & np.isfinite(y)]
    assert len(after) and after.mean() == pytest.approx(100.0, abs=1.0)
    assert np.nanmax(y) <= 101.0


def test_faults_sit_at_their_time_after_the_timed_start(run):
    ax = plots.goodput_figure(run).axes[0]
    vertical = {round(float(ln.get_xdata()[0]), 2) for ln in ax.lines
                if ln.get_linestyle() == "--" and len(set(ln.get_xdata())) == 1}
    assert {1.0, 2.7, 3.5} <= vertical
    assert "timed iterations started" in ax.figure.axes[-1].get_xlabel()


def test_every_figure_is_headed_with_scenario_time_scale_and_verdict(run):
    figs = plots.figures(run)
    assert {"goodput", "recovery", "iterations", "topology", "load"} <= set(figs)
    for name, fig in figs.items():
        heads = [t.get_text() for t in fig.texts if t.get_text().startswith("scenario ")]
        assert len(heads) == 1, name
        assert "time scale k = 1" in heads[0] and "fidelity: tcp " in heads[0], name
        fig.canvas.draw()
        box = next(t for t in fig.texts if t.get_text() == heads[0]).get_window_extent()
        for ax in fig.axes:                 # the heading sits above every axes' title
            assert box.y0 >= ax.get_window_extent().y1 - 1, name
        plt.close(fig)


def test_topology_names_stay_readable_over_a_faulted_link(run):
    td = run.transports["tcp"]
    ax = plots.topology_figure(td.topology, td.faults, td.model.timed_start_ns).axes[0]
    names = [t for t in ax.texts if t.get_text() == "t0p0g0"]
    assert names and names[0].get_bbox_patch() is not None and names[0].get_zorder() > 3
    labels = [t.get_text() for t in ax.texts if t.get_text().startswith("t0p0g0~t1p0s0")]
    assert labels and "1.0 s" in labels[0] and "2.7 s" in labels[0]


class _Page(HTMLParser):
    """What a browser would fetch and show: images, captions, table cells, visible text."""

    def __init__(self):
        super().__init__()
        self.images, self.captions, self.text, self.rows = [], [], [], []
        self._in, self._row = None, None

    def handle_starttag(self, tag, attrs):
        if tag == "img":
            self.images.append(dict(attrs))
        if tag in ("figcaption", "style", "title"):
            self._in = tag
        if tag == "tr":
            self._row = []
        if tag in ("th", "td") and self._row is not None:
            self._row.append([tag, ""])

    def handle_endtag(self, tag):
        if tag == self._in:
            self._in = None
        if tag == "tr" and self._row is not None:
            self.rows.append(self._row)
            self._row = None

    def handle_data(self, data):
        if self._in == "figcaption":
            self.captions.append(data.strip())
        if self._in != "style":
            self.text.append(data)
        if self._row:
            self._row[-1][1] += data.strip()


def test_the_report_renders_every_figure_with_words_and_no_python_values(run, tmp_path):
    out = tmp_path / "analysis"
    paths = plots.save_all(run, out / "figures")
    page = _Page()
    page.feed(report.write_report(run, paths, out / "report.html").read_text())
    assert len(page.images) == len(paths) >= 5
    for img in page.images:
        src = img["src"]
        assert src.startswith("data:image/png;base64,")        # self-contained: no fetch
        picture = Image.open(io.BytesIO(base64.b64decode(src.split(",", 1)[1])))
        picture.load()                                          # decodes whole
        assert picture.size[0] > 300 and picture.size[1] > 200
        assert img["alt"] and "_" not in img["alt"]
    assert len(page.captions) == len(paths)
    for caption in page.captions:            # words, never a file name
        assert "_" not in caption and len(caption.split()) >= 4, caption
    text = " ".join(page.text)
    for raw in ("True", "False", "None", "nan", "NaN", "{", "[object"):
        assert not re.search(rf"(?<![\w]){re.escape(raw)}(?![\w])", text), raw
    for row in page.rows:                    # no 0, 1, 2 ... index column
        assert not (row[0][0] == "th" and row[0][1].isdigit()), row


def test_numbers_to_meaningful_digits_and_words_for_flags():
    assert report.number(574.759319) == "575"
    assert report.number(13.8345) == "13.8"
    assert report.number(0.123456) == "0.123"
    assert report.number(30.0) == "30"
    assert report.cell_text(True) == "yes" and report.cell_text(False) == "no"
    assert report.cell_text(np.bool_(True)) == "yes"
    assert report.cell_text({"loss_verdicts_opened": 33, "losses_explained_by_trim": 2}) == \
        "opened 33, explained by a trim 2"
    assert report.cell_text({"reverse:reverse_probe_timeout": 6}) == "ACK path: probe timed out 6"
    assert report.caption("ev_state_mrc").startswith("EV state per path over time (mrc)")


@pytest.fixture(scope="module")
def run_without_fault_log(tmp_path_factory):
    """The same run with no faults.jsonl: no fault the figures can place, so no pre-fault steady
    rate to scale goodput by (as in a scenario with no fault)."""
    run_dir, _ = make_run_dir(tmp_path_factory.mktemp("no-fault-log"))
    return m.load_run(run_dir)


def test_the_goodput_title_names_the_scale_its_rows_are_drawn_in(run, run_without_fault_log):
    scaled = plots.goodput_figure(run)
    assert scaled._suptitle.get_text().startswith(
        "Goodput per transport, in % of what the surviving paths allow (dashed:")
    plain = plots.goodput_figure(run_without_fault_log)
    assert plain.axes[0].get_ylabel() == "tcp\nMbit/s"
    title = plain._suptitle.get_text()
    assert title.startswith("Goodput per transport, in Mbit/s") and "%" not in title
    plt.close(scaled)
    plt.close(plain)


def test_a_load_figure_with_nothing_to_draw_says_so_without_empty_axes(run):
    fig = plots.load_figure(run)            # tcp: no MRC/RoCE header names a packet's path
    assert fig.axes == []
    assert [t.get_text() for t in fig.texts if t.get_text().startswith("not drawn: tcp")]
    plt.close(fig)


def test_a_recovery_figure_with_no_fault_to_measure_says_so_without_empty_axes(
        run_without_fault_log):
    fig = plots.recovery_figure(run_without_fault_log)
    assert fig.axes == []
    assert [t.get_text() for t in fig.texts] == ["no fault with goodput samples to measure "
                                                 "recovery"]
    plt.close(fig)
