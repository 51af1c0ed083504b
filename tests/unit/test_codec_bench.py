"""The codec benchmark runs with no arguments' shape and reports consistent figures (the speed
goal itself is printed by `mrclab bench codec`, not asserted in a timed unit test)."""
from emulation.benches.codec import codec_bench


def test_codec_bench_reports_figures(capsys):
    figures = codec_bench(seconds=0.05)
    out = capsys.readouterr().out
    assert "fast codec" in out and "Scapy" in out and "ratio" in out
    assert figures["fast_pkts_per_s"] > 0 and figures["scapy_pkts_per_s"] > 0
    ratio = figures["fast_pkts_per_s"] / figures["scapy_pkts_per_s"]
    assert abs(ratio - figures["ratio"]) <= 0.01 * ratio + 0.1
    assert figures["goal_met"] == (figures["ratio"] >= figures["goal_ratio"])
    assert figures["payload_bytes"] == 1024 and figures["frame_bytes"] == 1024 + 146


def test_codec_bench_cli_form_returns_an_exit_code(capsys):
    assert codec_bench(["--seconds", "0.02", "--mode", "ecmp", "--payload-bytes", "100"]) == 0
    out = capsys.readouterr().out
    assert "codec bench (ecmp, 100 B payload, 206 B frame" in out
