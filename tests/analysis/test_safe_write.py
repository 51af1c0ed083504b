"""`mrclab analyze` never writes through a link (analysis/safe_write.py): each link case (a report,
a figure, the output directories, a data file) on a hand-built run directory, through the CLI."""
from __future__ import annotations

import os

import pytest

from analysis import safe_write
from tests.helpers.cli import run_mrclab as run
from tests.helpers.hostile_corpus import remove_tree
from tests.helpers.synthetic_run import make_run_dir


@pytest.fixture
def run_dir(tmp_path):
    return make_run_dir(tmp_path)[0]


@pytest.fixture
def victim(tmp_path):
    v = tmp_path / "victim.txt"
    v.write_text("precious")
    return v


def test_report_html_as_a_link_is_replaced_not_followed(capsys, run_dir, victim):
    (run_dir / "analysis").mkdir()
    (run_dir / "analysis" / "report.html").symlink_to(run_dir / "tcp" / "summary.json")
    inside = (run_dir / "tcp" / "summary.json").read_text()
    rc, out, err = run(capsys, "analyze", str(run_dir))
    assert rc == 0, err
    report = run_dir / "analysis" / "report.html"
    assert not report.is_symlink() and report.read_text().startswith("<!doctype html>")
    assert (run_dir / "tcp" / "summary.json").read_text() == inside


def test_a_figure_as_a_link_is_replaced_not_followed(run_dir, tmp_path):
    import matplotlib.pyplot as plt
    target = run_dir / "tcp" / "summary.json"
    before = target.read_text()
    out = tmp_path / "figs"
    out.mkdir()
    (out / "f.png").symlink_to(target)
    fig = plt.figure()
    safe_write.save_figure(fig, out / "f.png")
    plt.close(fig)
    assert not (out / "f.png").is_symlink() and (out / "f.png").read_bytes()[:4] == b"\x89PNG"
    assert target.read_text() == before


@pytest.mark.parametrize("where", ["outside", "inside"])
def test_analysis_dir_as_a_link_is_refused_with_a_message(capsys, run_dir, tmp_path, where):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    target = elsewhere if where == "outside" else run_dir / "tcp"
    listing = sorted(os.listdir(target))
    (run_dir / "analysis").symlink_to(target)
    rc, out, err = run(capsys, "analyze", str(run_dir))
    assert rc == 2 and "Traceback" not in err
    assert f"{run_dir / 'analysis'} is a link" in err
    assert sorted(os.listdir(target)) == listing          # nothing written there


def test_figures_dir_as_a_link_is_refused(capsys, run_dir, tmp_path):
    (run_dir / "analysis").mkdir()
    (run_dir / "analysis" / "figures").symlink_to(run_dir / "tcp")
    listing = sorted(os.listdir(run_dir / "tcp"))
    rc, out, err = run(capsys, "analyze", str(run_dir))
    assert rc == 2 and "figures is a link" in err
    assert sorted(os.listdir(run_dir / "tcp")) == listing


def test_a_data_file_linking_out_of_the_run_is_refused(capsys, run_dir, victim):
    (run_dir / "tcp" / "h9-p0.pcap").symlink_to(victim)
    rc, out, err = run(capsys, "analyze", str(run_dir))
    assert rc == 2 and "outside the run directory" in err and "h9-p0.pcap" in err


def test_a_link_staying_inside_the_run_is_read(run_dir):
    (run_dir / "tcp" / "copy.json").symlink_to(run_dir / "tcp" / "summary.json")
    assert safe_write.check_run_dir(run_dir) == run_dir.resolve()


def test_write_text_makes_missing_directories_and_refuses_a_file_in_the_way(tmp_path):
    assert safe_write.write_text(tmp_path / "a" / "b" / "c.txt", "x").read_text() == "x"
    (tmp_path / "plain").write_text("f")
    with pytest.raises(safe_write.UnsafePath, match="not a directory"):
        safe_write.write_text(tmp_path / "plain" / "c.txt", "x")
    with pytest.raises(OSError):
        safe_write.write_text(tmp_path / "a", "x")     # a directory stands at the name
    assert [p.name for p in (tmp_path / "a" / "b").iterdir()] == ["c.txt"]   # no temp left


def test_a_link_into_a_sibling_sharing_the_runs_name_as_a_prefix_is_outside(tmp_path):
    run = tmp_path / "run"
    evil = tmp_path / "run-evil"          # "<run>-evil" starts with the run's path as a string
    (run / "tcp").mkdir(parents=True)
    evil.mkdir()
    (evil / "x").write_text("planted")
    (run / "tcp" / "x").symlink_to(evil / "x")
    with pytest.raises(safe_write.UnsafePath, match="outside the run directory"):
        safe_write.check_run_dir(run)
    (run / "tcp" / "x").unlink()
    (run / "tcp" / "x").symlink_to(run / "tcp")          # inside: fine
    assert safe_write.check_run_dir(run) == run.resolve()


def test_a_thousand_nested_directories_are_refused_without_recursion(tmp_path):
    d = tmp_path / "run"
    d.mkdir()
    for _ in range(1100):
        d = d / "d"
        os.mkdir(d)
    try:
        with pytest.raises(safe_write.UnsafePath,
                           match=f"nested more than {safe_write.MAX_DEPTH}"):
            safe_write.check_run_dir(tmp_path / "run")
    finally:            # pytest's own clean-up of the tree would recurse past the limit
        remove_tree(tmp_path / "run")
