"""report.html opens with the verdict in words, drawn from the same run model as summary.json:
a hand-built run directory (tests/helpers/synthetic_run.py's tcp run) with one refused
clear, one fault sent after the traffic and one never sent."""
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
    assert shown == summary["recovery_ms"] == [360.0, 0.0]
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
    assert "link_down t0p0g0~t1p0s0</b> (at_s=1): tcp recovered in 360 ms" in opening
    assert "link_up t0p0g0~t1p0s0</b> (at_s=2.7): tcp recovered in 0 ms" in opening
    assert "did not take effect" not in html


def test_the_verdict_says_when_the_cpu_bound_the_run(tmp_path):
    run_dir, summary = make_run_dir(tmp_path)
    # the runner's CPU figures (emulation/run/cpu_meter.py): 2 cores 97% busy during the collective
    summary["cpu"] = {"cores": 2, "window_s": 10.0, "busy_fraction": 0.97, "busy_cores": 1.94,
                      "cores_by_role": {"workers": 1.15, "switches": 0.7, "other": 0.09},
                      "saturated": True}
    (run_dir / "tcp" / "summary.json").write_text(json.dumps(summary))
    html = report.write_report(metrics.load_run(run_dir), {}, tmp_path / "r.html").read_text()
    opening = html[html.index("<h2>Verdict</h2>"):html.index("Transports side by side")]
    assert ("<p class='bad-text'>tcp: CPU 97% of 2 cores busy during the collective (cores: "
            "workers 1.15, switches 0.70, other 0.09); CPU-bound") in opening
    summary["cpu"].update(busy_fraction=0.5, saturated=False)
    (run_dir / "tcp" / "summary.json").write_text(json.dumps(summary))
    html = report.write_report(metrics.load_run(run_dir), {}, tmp_path / "r.html").read_text()
    assert "<p class='muted'>tcp: CPU 50% of 2 cores busy" in html and "CPU-bound" not in html
