"""The codec benchmark runs with no arguments' shape and reports consistent figures (the speed
goal itself is printed by `mrclab bench codec`, not asserted in a timed unit test)."""
from emulation.benches.codec import codec_bench


def test_codec_bench_reports_figures(capsys):
    figures = codec_bench(seconds=0.05)
    out = capsys.readouterr().out
    assert "fast codec" in out and "Scapy" in out and "ratio" in out
    assert figures["fast_pkts_per_s"] > 0 and figures["scapy_pkts_per_s"] > 0
    fast, scapy = figures["fast_pkts_per_s"], figures["scapy_pkts_per_s"]
    ratio = fast / scapy
    # both rates are printed rounded to whole packets/s (off by up to 0.5 each) and the ratio
    # to 0.1: the ratio recomputed from the printed rates can differ by that much, no more
    rounding = ratio * (0.5 / fast + 0.5 / scapy) / (1 - 0.5 / scapy)
    assert abs(ratio - figures["ratio"]) <= rounding + 0.05 + 1e-9
    assert figures["goal_met"] == (figures["ratio"] >= figures["goal_ratio"])
    assert figures["payload_bytes"] == 1024 and figures["frame_bytes"] == 1024 + 146


def test_codec_bench_cli_form_returns_an_exit_code(capsys):
    assert codec_bench(["--seconds", "0.02", "--mode", "ecmp", "--payload-bytes", "100"]) == 0
    out = capsys.readouterr().out
    assert "codec bench (ecmp, 100 B payload, 206 B frame" in out
