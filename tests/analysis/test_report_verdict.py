"""report.html opens with the verdict in words, drawn from the same run model as summary.json:
a hand-built run directory (tests/helpers/synthetic_run.py's tcp run) with one refused
clear, one fault sent after the traffic and one never sent."""
import html
import json
import re

from analysis import metrics, report
from emulation.run import run_summary
from tests.helpers.synthetic_run import TEXT, make_run_dir, parse_run, records, write_run


def test_report_opens_with_the_verdict_and_names_each_fault_that_did_not_take_effect(tmp_path):
    run_dir, summary = make_run_dir(tmp_path)
    out = report.write_report(metrics.load_run(run_dir), {}, run_dir / "analysis" / "report.html")
    html = out.read_text()
    verdict, details = html.index("<h2>Verdict</h2>"), html.index("Transports side by side")
    assert verdict < details
    opening = html[verdict:details]
    assert "a scheduled fault did not take effect" in opening
    assert "tcp: 30 of 30 iterations completed, data verified" in opening
    assert "gray_loss_clear t0p0g0~t1p0s1 (at_s=2.8) did not take effect" in opening
    assert "no gray_loss on t0p0g0~t1p1s0" in opening
    assert "after the traffic ended" in opening and "traffic ended before it was due" in opening
    # the recovery numbers of the verdict table are summary.json's, fault by fault
    shown = [float(x) for x in re.findall(r"<td>(\d+) ms<br>", opening)]
    assert shown == summary["recovery_ms"] == [380.0, 0.0]
    # summary.json is linked, not dumped
    assert 'href="../summary.json"' in html and 'href="../tcp/summary.json"' in html
    assert "recovery_definition" not in html and "<pre>" not in html


def test_a_clean_run_says_so_first(tmp_path):
    run_dir = tmp_path / "clean-20260101"
    tdir = run_dir / "tcp"
    tdir.mkdir(parents=True)
    scn = parse_run(TEXT.split("[[faults]]\nat_s = 2.8")[0])      # only the two faults that ran
    write_run(tdir, records(parse_run())[:2])
    s = run_summary.summarize(scn, "tcp", tdir, {"partial": False,
                                            "exit_codes": {f"h{i}": 0 for i in range(4)}})
    (tdir / "summary.json").write_text(json.dumps(s))
    html = report.write_report(metrics.load_run(run_dir), {}, tmp_path / "r.html").read_text()
    opening = html[html.index("<h2>Verdict</h2>"):html.index("Transports side by side")]
    assert "class='verdict'" in opening and "class='verdict bad'" not in opening
    assert "all 2 scheduled faults took effect" in opening
    assert "link_down t0p0g0~t1p0s0</b> (at_s=1): tcp recovered in 380 ms" in opening
    assert "link_up t0p0g0~t1p0s0</b> (at_s=2.7): tcp recovered in 0 ms" in opening
    assert "did not take effect" not in html


def _opening(run_dir, tmp_path):
    text = report.write_report(metrics.load_run(run_dir), {}, tmp_path / "r.html").read_text()
    return html.unescape(text[text.index("<h2>Verdict</h2>"):text.index("Transports side by side")])


def test_the_cpu_line_reads_the_load_through_the_fidelity_verdict(tmp_path):
    """The CPU meter and the verdict never disagree: saturated cores under an "ok" verdict
    measured the fabric; a verdict other than "ok" says the times measure the CPU, saturated
    or not."""
    run_dir, summary = make_run_dir(tmp_path)
    # the runner's CPU figures (emulation/run/cpu_meter.py): 2 cores 97% busy during the collective
    summary["cpu"] = {"cores": 2, "window_s": 10.0, "busy_fraction": 0.97, "busy_cores": 1.94,
                      "cores_by_role": {"workers": 1.15, "switches": 0.7, "other": 0.09},
                      "saturated": True}
    summary["fidelity"] = {"verdict": "ok", "violations": []}
    (run_dir / "tcp" / "summary.json").write_text(json.dumps(summary))
    opening = _opening(run_dir, tmp_path)
    assert ("<p class='muted'>tcp: CPU 97% of 2 cores busy during the collective (cores: "
            "workers 1.15, switches 0.70, other 0.09); cores saturated, yet every fidelity "
            "invariant held") in opening
    assert "CPU-bound" not in opening and "measure this machine" not in opening
    summary["fidelity"] = {"verdict": "invalid", "violations": [{"invariant": "timer_lateness"}]}
    summary["cpu"].update(busy_fraction=0.5, saturated=False)
    (run_dir / "tcp" / "summary.json").write_text(json.dumps(summary))
    opening = _opening(run_dir, tmp_path)
    assert ("<p class='bad-text'>tcp: CPU 50% of 2 cores busy during the collective (cores: "
            "workers 1.15, switches 0.70, other 0.09); fidelity invalid: its times measure "
            "this machine's CPU") in opening


def test_no_green_verdict_over_a_run_whose_fidelity_is_not_ok(tmp_path):
    run_dir = tmp_path / "clean-20260101"
    tdir = run_dir / "tcp"
    tdir.mkdir(parents=True)
    scn = parse_run(TEXT.split("[[faults]]\nat_s = 2.8")[0])      # only the two faults that ran
    write_run(tdir, records(parse_run(TEXT))[:2])
    s = run_summary.summarize(scn, "tcp", tdir, {"partial": False,
                                            "exit_codes": {f"h{i}": 0 for i in range(4)}})
    assert s["fidelity"]["verdict"] == "ok"      # the workers sampled on their grid
    s["fidelity"] = {"verdict": "invalid", "violations": [{"invariant": "worker_lateness"}]}
    s["recovery_void"] = ["a stall inside its recovery window: worker h1 ran 9 ms late", None]
    (tdir / "summary.json").write_text(json.dumps(s))
    opening = _opening(run_dir, tmp_path)
    assert "class='verdict bad'" in opening and "class='verdict'" not in opening
    assert "but the fidelity of tcp is not \"ok\"" in opening
    # the first fault's recovery is void, in the sentence and in the table
    assert "tcp recovered in 380 ms (void: a stall inside its recovery window)" in opening
    assert "380 ms void</span>" in opening and "worker h1 ran 9 ms late" in opening
