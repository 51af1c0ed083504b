"""summary.json's control-plane keys (emulation/path_monitor.denial_summary) from a controller
log and the runner's fault record, by hand."""
from emulation.network.path_monitor import denial_summary
from model.events import ControllerLog

FAULT = {"entry": 0, "t_ns": 10_000_000_000, "ok": True, "command": {"action": "gray_loss"}}


def test_detection_runs_from_the_first_applied_fault_to_the_first_deny_after_it():
    log = [{"t_ns": 9_000_000_000, "action": "gray_loss"},
           {"t_ns": 12_500_000_000, "action": ControllerLog.DENY, "rule": {"link": "h1~t0p0g0"},
            "reason": "path prober"},
           {"t_ns": 13_000_000_000, "action": ControllerLog.DENY, "rule": {"plane": 1},
            "reason": ""}]
    got = denial_summary(log, [FAULT, {"t_ns": 11_000_000_000, "ok": True}])
    assert got["detection_ms"] == 2500.0
    assert got["denied"] == [{"link": "h1~t0p0g0", "t_ns": 12_500_000_000, "reason": "path prober"},
                             {"plane": 1, "t_ns": 13_000_000_000, "reason": ""}]


def test_no_deny_or_no_fault_means_no_detection_time():
    assert denial_summary([], [FAULT]) == {"denied": [], "detection_ms": None}
    deny = {"t_ns": 1, "action": ControllerLog.DENY, "rule": {"plane": 0}}
    assert denial_summary([deny], [])["detection_ms"] is None
    # a deny before the fault (by hand, say) is listed but detects nothing
    assert denial_summary([deny], [FAULT])["detection_ms"] is None
    failed = dict(FAULT, ok=False)
    assert denial_summary([dict(deny, t_ns=FAULT["t_ns"] + 5)], [failed])["detection_ms"] is None


def test_a_run_directory_log_with_a_cut_line_still_gives_the_denials(tmp_path):
    from emulation.network.path_monitor import run_denials
    log = tmp_path / "faults.jsonl"
    log.write_text('{"t_ns": 12000000000, "action": "deny", "rule": {"plane": 0}}\n{"t_ns": 13')
    assert run_denials(log, [FAULT])["detection_ms"] == 2000.0
    assert run_denials(tmp_path / "missing.jsonl", [FAULT]) == {"denied": [], "detection_ms": None}
