"""Corrupt run data: every loader keeps what is readable and reports what is not, and `mrclab
analyze` exits 0 with the problems listed (or 2 with a message), never with a traceback."""
import json

import pytest

from analysis import cli, metrics, trimming
from analysis.logs import load_events
from model.events import Event
from tests.helpers.synth import make_run

MONO0 = 10_000_000_000            # make_run's run start (CLOCK_MONOTONIC ns)
GOODPUT_ROWS = 40                 # make_run: 20 goodput samples on each of h0 and h1
ITERATIONS = 6


@pytest.fixture
def run(tmp_path):
    return make_run(tmp_path / "run", transports=("mrc",), packets=20)


def append(path, line: str) -> int:
    """Append one line; its line number."""
    n = len(path.read_bytes().split(b"\n")) if path.exists() else 1
    if path.exists() and not path.read_bytes().endswith(b"\n"):
        line = "\n" + line
        n += 1
    with open(path, "a") as fh:
        fh.write(line + "\n")
    return n


def event(**fields):
    return json.dumps({"t_ns": MONO0 + 1, "host": "h1", "event": Event.GOODPUT, "rx_bytes": 5,
                       **fields})


def loaded(run_dir):
    """(problems, goodput rows, timed iterations) the analysis computes from the run."""
    run = metrics.load_run(run_dir)
    td = run.transports["mrc"]
    table = metrics.compare_transports(run)
    goodput = int((td.events["event"] == Event.GOODPUT).sum())
    return td.problems, goodput, int(table.loc["mrc", "iterations_completed"])


@pytest.mark.parametrize("line,reason", [
    (event(event=[Event.GOODPUT]), "event is not a string (got ['goodput'])"),
    (event(host={"name": "h1"}), "host is not a string (got {'name': 'h1'})"),
    (event(t_ns=2**63), "t_ns is not an integer ns in 0..2^63-1 (got 9223372036854775808)"),
    (event(t_ns=2**64 + 5), "t_ns is not an integer ns in 0..2^63-1"),
    (event(rx_bytes="lots"), "rx_bytes is not a non-negative number (got 'lots')"),
    (event(rx_bytes=float("nan")), "rx_bytes is not a non-negative number (got nan)"),
    ("[" * 100_000 + "]" * 100_000, "not JSON (ValueError: nested too deeply)"),
    ('{"t_ns": 1, "event": "x", "deep": ' + "[" * 100_000 + "]" * 100_000 + "}",
     "not JSON (ValueError: nested too deeply)"),
    (json.dumps({"t_ns": MONO0 + 1, "host": "h1", "event": Event.ITERATION, "iter": 7,
                 "collective": "allreduce", "end_ns": MONO0 + 2}),
     "iteration event without start_ns"),
    (json.dumps({"t_ns": MONO0 + 1, "host": "h1", "event": Event.ITERATION, "iter": "seven",
                 "collective": "allreduce", "start_ns": MONO0, "end_ns": MONO0 + 2}),
     "iter is not a non-negative integer"),
])
def test_bad_log_line_is_reported_and_the_rest_analysed(run, line, reason):
    lineno = append(run / "mrc" / "h1.jsonl", line)
    problems, goodput, iterations = loaded(run)
    assert [p for p in problems if p.startswith(f"h1.jsonl:{lineno}: {reason}")]
    assert (goodput, iterations) == (GOODPUT_ROWS, ITERATIONS)


def test_iterations_all_without_a_field_are_reported_not_a_crash(run):
    log = run / "mrc" / "h0.jsonl"
    lines = []
    for text in log.read_text().splitlines():
        try:
            ev = json.loads(text)
        except ValueError:
            lines.append(text)
            continue
        if ev.get("event") == Event.ITERATION:
            del ev["collective"]
        lines.append(json.dumps(ev))
    log.write_text("\n".join(lines) + "\n")
    problems, goodput, iterations = loaded(run)
    assert sum("iteration event without collective" in p for p in problems) == ITERATIONS
    assert (goodput, iterations) == (GOODPUT_ROWS, 0)


def test_fault_log_line_with_a_list_action_is_reported(run):
    lineno = append(run / "mrc" / "faults.jsonl",
                    json.dumps({"t_ns": MONO0 + 5, "action": ["link_down"], "a": "t0p0g0"}))
    problems, goodput, iterations = loaded(run)
    assert f"faults.jsonl:{lineno}: action is not a string (got ['link_down'])" in problems
    assert len(metrics.load_run(run).transports["mrc"].faults) == 2      # link_down, link_up


@pytest.mark.parametrize("where", ["mrc", "."])
def test_summary_that_is_not_utf8_is_reported(run, where):
    (run / where / "summary.json").write_bytes(b'{"world_size": 2, "note": "caf\xe9"}')
    problems, goodput, iterations = loaded(run)
    assert any(p.startswith("summary.json: not JSON (UnicodeDecodeError") for p in problems)
    assert (goodput, iterations) == (GOODPUT_ROWS, ITERATIONS)


@pytest.mark.parametrize("content,reason", [
    ("[1, 2]", "summary.json: not a JSON object, got list"),
    ('{"world_size": "two"}', "summary.json: world_size is not a non-negative integer (got 'two'), ignored"),
    ('{"world_size": 2, "fabric": [2, 2]}', "summary.json: fabric is not an object"),
])
def test_summary_of_the_wrong_shape_is_reported(run, content, reason):
    (run / "mrc" / "summary.json").write_text(content)
    problems, goodput, iterations = loaded(run)
    assert any(p.startswith(reason) for p in problems)
    assert (goodput, iterations) == (GOODPUT_ROWS, ITERATIONS)


def test_scenario_copy_that_is_not_utf8_is_reported(run):
    (run / "mrc" / "scenario.toml").write_bytes(b"[fabric]\nplanes = 2  # caf\xe9\n")
    problems, goodput, iterations = loaded(run)
    assert any(p.startswith("scenario.toml: not readable TOML (UnicodeDecodeError")
               for p in problems)
    assert (goodput, iterations) == (GOODPUT_ROWS, ITERATIONS)


def test_unreadable_clock_is_reported_and_the_run_level_clock_used(run):
    (run / "mrc" / "clock.json").write_text('{"monotonic_ns": "soon", "realtime_ns": 1}')
    td = metrics.load_run(run).transports["mrc"]
    assert any("clock.json: clock file needs integer monotonic_ns and realtime_ns" in p
               for p in td.problems)
    # make_run's first packet leaves h0 at the run start: the run's clock.json maps it back there
    assert int(td.packets["time_ns"].min()) == MONO0


def test_analyze_lists_the_problems_and_exits_0(run, capsys):
    log = run / "mrc" / "h1.jsonl"
    append(log, event(event=[Event.GOODPUT]))
    append(log, event(t_ns=2**64))
    append(log, "[" * 100_000 + "]" * 100_000)
    append(log, event(rx_bytes="lots"))
    (run / "summary.json").write_bytes(b"\xff\xfe")
    (run / "mrc" / "scenario.toml").write_bytes(b"\xff")
    assert cli.main([str(run)]) == 0
    out = capsys.readouterr().out
    # make_run's own two broken h0 lines, the 4 lines, summary.json, scenario.toml, and the 4
    # captures whose direction is unknown without the scenario's fabric
    assert "mrc: 12 unreadable input item(s)" in out
    report = (run / "analysis" / "report.html").read_text()
    assert "h1.jsonl:23: not JSON (ValueError: nested too deeply)" in report
    assert "scenario.toml: not readable TOML (UnicodeDecodeError" in report


def test_analyze_of_a_file_instead_of_a_run_exits_2(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("x")
    assert cli.main([str(tmp_path / "notes.txt")]) == 2
    assert "notes.txt is not a run directory" in capsys.readouterr().err


def test_analyze_into_an_unusable_output_directory_exits_2(run, tmp_path, capsys):
    (tmp_path / "a-file").write_text("x")
    assert cli.main([str(run), "--out-dir", str(tmp_path / "a-file" / "analysis")]) == 2
    assert "a-file" in capsys.readouterr().err


def test_analyze_of_a_run_without_any_data_exits_2(tmp_path, capsys):
    (tmp_path / "empty" / "mrc").mkdir(parents=True)
    (tmp_path / "empty" / "summary.json").write_bytes(b"\xff")
    assert cli.main([str(tmp_path / "empty")]) == 2
    assert "no transport data" in capsys.readouterr().err


def test_load_events_keeps_good_rows_between_bad_ones(tmp_path):
    path = tmp_path / "h0.jsonl"
    path.write_text("\n".join([
        json.dumps({"t_ns": 1, "host": "h0", "event": Event.GOODPUT, "rx_bytes": 1}),
        json.dumps({"t_ns": 2, "host": ["h0"], "event": Event.GOODPUT, "rx_bytes": 2}),
        json.dumps({"t_ns": 3, "host": "h0", "event": Event.GOODPUT, "rx_bytes": 3})]) + "\n")
    df = load_events(path)
    assert df["rx_bytes"].tolist() == [1, 3]
    assert df.attrs["log_problems"] == ["h0.jsonl:2: host is not a string (got ['h0'])"]


# ---------------------------------------------------------------- trimming loaders


def test_victim_goodput_skips_an_iteration_without_end_ns(tmp_path):
    ms = 1_000_000
    (tmp_path / "worker.json").write_text(json.dumps(
        {"collective": "incast", "hosts": ["h0", "h1", "h2"], "victim": [2, 1]}))
    lines = [{"t_ns": t * 100 * ms, "host": "h1", "event": Event.GOODPUT, "rx_bytes": t * 1_250_000}
             for t in range(3)]
    lines.append({"t_ns": 5, "host": "h1", "event": Event.ITERATION, "iter": 0})
    lines.append({"t_ns": 6, "host": "h1", "event": Event.GOODPUT, "rx_bytes": "many"})
    (tmp_path / "worker-h1.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    v = trimming.victim_goodput(tmp_path)
    # 1,250,000 bytes per 100 ms = 100 Mbit/s
    assert (v["src"], v["dst"]) == ("h2", "h1") and v["mean_mbit"] == pytest.approx(100.0)


@pytest.mark.parametrize("config", [
    {"collective": "incast", "hosts": ["h0", "h1"], "victim": [2, 1]},       # rank out of range
    {"collective": "incast", "hosts": ["h0", "h1"], "victim": "h1"},
    {"collective": "incast", "hosts": {"h0": 0}, "victim": [0, 1]},
])
def test_victim_goodput_of_a_bad_worker_config_is_none(tmp_path, config):
    (tmp_path / "worker.json").write_text(json.dumps(config))
    assert trimming.victim_goodput(tmp_path) is None


@pytest.mark.parametrize("content", [b"\xff\xfe", b"[1, 2]", b"[" * 100_000, b'{"ports": 3}'])
def test_unreadable_counter_snapshot_gives_no_ports(tmp_path, content):
    (tmp_path / "trim_counters.json").write_bytes(content)
    counters = trimming.load_trim_counters(tmp_path)
    assert len(trimming.port_table(counters)) == 0


def test_counter_snapshot_keeps_the_ports_whose_counters_are_numbers(tmp_path):
    (tmp_path / "trim_counters.json").write_text(json.dumps({"totals": [], "ports": {
        "t0p0g0-e1": {"marked": 3, "trimmed": 2},
        "t0p0g0-e2": {"marked": "three"},
        "t0p0g0-e3": [1]}}))
    table = trimming.port_table(trimming.load_trim_counters(tmp_path))
    assert table["port"].tolist() == ["t0p0g0-e1"]
    assert table["trimmed"].tolist() == [2]


def test_endpoint_stats_skip_malformed_counters(tmp_path):
    lines = [{"t_ns": 1, "host": "h0", "event": Event.RETRANSMIT, "qp": 1, "reason": "timeout"},
             {"t_ns": 2, "host": "h0", "event": Event.COUNTERS, "qps": "all of them"},
             {"t_ns": 3, "host": "h0", "event": Event.COUNTERS,
              "qps": {"1": {"receiver": {"nacks": "many"}}}}]
    (tmp_path / "endpoint-h0.jsonl").write_text(
        "".join(json.dumps(x) + "\n" for x in lines) + "[" * 100_000 + "\n")
    stats = trimming.load_endpoint_stats(tmp_path)
    assert stats["retransmits_by_reason"] == {"timeout": 1}
    assert stats["hosts_with_counters"] == 0
