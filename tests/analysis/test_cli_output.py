"""`mrclab analyze` output: a readable table within 100 columns, the nccl-tests rows, and the
same numbers as JSON and CSV, on a run directory built by hand (tests/helpers/synthetic_run.py:
every iteration lasts 100 ms, all verified)."""
import csv
import io
import json

import pytest

from analysis import cli
from tests.helpers import synthetic_run

MIB = 1 << 20


@pytest.fixture
def run_dir(tmp_path):
    run = tmp_path / "run"
    tdir = run / "tcp"
    tdir.mkdir(parents=True)
    synthetic_run.write_worker_logs(tdir, 10**12, iterations=10, outage=(0, 0))
    (tdir / "worker.json").write_text(json.dumps(
        {"collective": "allreduce", "message_bytes": MIB, "world_size": 4,
         "hosts": ["h0", "h1", "h2", "h3"], "transport": "tcp", "iterations": 10}))
    return run


def test_readable_table_fits_100_columns_and_has_the_nccl_row(run_dir, capsys):
    assert cli.main([str(run_dir), "--wide"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert max(len(x) for x in lines) <= 100
    nccl = next(x for x in lines if x.startswith("tcp") and "float" in x).split()
    # 1 MiB in 100 ms: algbw = 1,048,576 / 0.1 / 1e9 = 0.01049 GB/s; busbw x 1.5 = 0.01573
    assert nccl == ["tcp", "1048576", "262144", "float", "sum", "100.0", "100.0", "0.01049",
                    "0.01573", "0"]


def test_json_has_every_metric_and_the_nccl_row(run_dir, capsys):
    assert cli.main([str(run_dir), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    row = data["tcp"]
    assert row["iterations_completed"] == 10
    assert row["nccl"]["algbw_GBps"] == pytest.approx(MIB / 0.1 / 1e9, rel=1e-6)
    assert row["nccl"]["busbw_GBps"] == pytest.approx(1.5 * MIB / 0.1 / 1e9, rel=1e-6)
    assert row["nccl"]["wrong"] == 0


def test_csv_leads_with_the_nccl_columns(run_dir, capsys):
    assert cli.main([str(run_dir), "--csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert len(rows) == 1
    assert list(rows[0])[:4] == ["transport", "collective", "size_bytes", "count"]
    assert rows[0]["transport"] == "tcp" and rows[0]["redop"] == "sum"
    assert float(rows[0]["time_mean_ms"]) == pytest.approx(100.0)
    assert rows[0]["iterations_completed"] == "10"


def test_json_and_csv_exclude_each_other(run_dir, capsys):
    with pytest.raises(SystemExit):
        cli.main([str(run_dir), "--json", "--csv"])
    assert "not allowed with" in capsys.readouterr().err


def test_every_output_carries_the_fidelity_verdict_and_time_scale(run_dir, capsys):
    (run_dir / "tcp" / "summary.json").write_text(json.dumps(
        {"transport": "tcp", "time_scale": 4.0, "recovery_void": ["a stall", None],
         "fidelity": {"verdict": "invalid", "violations": []}}))
    assert cli.main([str(run_dir)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    head = lines[0].split()
    row = next(x for x in lines if x.startswith("tcp ")).split()
    assert head[:2] == ["transport", "fidelity"] and row[:2] == ["tcp", "invalid"]
    # the statement the console prints: the time scale, the voided recovery
    said = " ".join(out.split())
    assert "tcp: fidelity invalid at time_scale 4" in said
    assert "recovery of fault 1 void" in said
    assert max(len(x) for x in lines) <= 100
    assert cli.main([str(run_dir), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)["tcp"]
    assert (data["fidelity"], data["time_scale"], data["recovery_void"]) == ("invalid", 4.0, 1)
    assert cli.main([str(run_dir), "--csv"]) == 0
    row = next(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert (row["fidelity"], row["time_scale"], row["recovery_void"]) == ("invalid", "4.0", "1")
    # a run without a summary is not vouched for
    (run_dir / "tcp" / "summary.json").unlink()
    assert cli.main([str(run_dir), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["tcp"]["fidelity"] == "not assessed"


def test_a_failing_cell_is_reported_without_its_terminal_colours(capsys, monkeypatch):
    # nbclient's error text carries ANSI colour escapes: they are removed before the message is
    # cut to its last 2000 characters, so the cut never lands inside one
    escape = "\x1b[0;31m"
    message = (escape + "x" * 7 + "\x1b[0m") * 400 + "ValueError: the cell's own error"

    def fail(*args, **kwargs):
        raise RuntimeError(message)
    monkeypatch.setattr(cli, "run_notebook", fail)
    assert cli.notebook_main(["some-run"]) == 1
    err = capsys.readouterr().err
    assert "\x1b" not in err and err.rstrip().endswith("ValueError: the cell's own error")


@pytest.mark.parametrize("value, ok", [("20", True), ("2.5", True), ("abc", False),
                                       ("True", False), ("nan", False)])
def test_a_numeric_notebook_parameter_takes_a_number(value, ok):
    source = 'RUN = "latest"\nBIN_MS = 10.0\n'
    params = {"BIN_MS": cli.parameter_value(value)}
    if ok:
        cli.check_parameter_kinds(source, params)
    else:
        with pytest.raises(cli.UsageError, match="BIN_MS is a number"):
            cli.check_parameter_kinds(source, params)
    cli.check_parameter_kinds(source, {"RUN": cli.parameter_value("5")})   # a string takes any
