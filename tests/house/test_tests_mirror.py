"""Every shipped source module has a test file named for it: tests/.../test_<module>.py, or
test_<module>_<aspect>.py when it has several, so the tests of a module are found by its name.
A module without one is in UNTESTED_BY_NAME with the reason and where it is exercised instead;
an entry whose module gained a test file or is gone fails too, so the list stays short."""
import re

from tests.helpers.paths import REPO

PACKAGES = ("model", "controller", "traffic", "emulation", "analysis")

# module -> why it has no test file of its name, and what exercises it
UNTESTED_BY_NAME = {
    "analysis/fidelity_verdict.py": "the verdict rules of analysis/fidelity.py, split off by "
                                    "size: tests/analysis/test_fidelity.py",
    "analysis/fidelity_captures.py": "the capture invariants of analysis/fidelity.py, split off "
                                     "by size: tests/analysis/test_fidelity.py",
    "analysis/plots_common.py": "colours and fault markers shared by the figures: "
                                "tests/analysis/test_plots*.py",
    "traffic/core/ev_probes.py": "the probes in flight of the EV set (a mixin of EVSet): "
                                 "tests/traffic/core/test_evs*.py",
    "traffic/nic/queue_pair.py": "the endpoint's QP glue: tests/traffic/nic/test_endpoint*.py",
    "model/argtypes.py": "argparse value types: every command's bad-argument tests "
                         "(tests/emulation/test_cli.py, tests/emulation/benches/)",
    "model/clip.py": "the cut of quoted values in error messages: the hostile corpus "
                     "(tests/house/test_hostile_corpus.py) and the error-message tests",
    "model/dscp.py": "constants: tests/emulation/network/test_fabric_control_class.py and "
                     "test_trimming_commands.py check the bytes and tc commands they make",
    "model/events.py": "the log names: tests/house/test_event_names.py",
    "model/switchport.py": "a port's default queue configuration: "
                           "tests/emulation/calibration/test_time_scale.py",
    "controller/actions.py": "the fault actions by name: tests/house/test_event_names.py and "
                             "tests/controller/test_planner.py",
    "controller/app.py": "the controller's state machine behind the API: "
                         "tests/controller/test_api*.py",
    "controller/bpf_maps.py": "thin reader of the trimmers' BPF maps (needs root): "
                              "tests/controller/test_counters.py with a fake, "
                              "tests/integration/test_trim_bpf.py for real",
    "controller/client.py": "the API's client: tests/controller/test_api*.py",
    "controller/commands.py": "command records: tests/controller/test_planner.py and "
                              "test_executor.py",
    "controller/fault_log.py": "the fault log: tests/controller/test_api.py (GET /faults) and "
                               "the runner integration tests that read faults.jsonl",
    "controller/host_namespaces.py": "POST /hosts registration: "
                                     "tests/controller/test_api_input.py",
    "controller/openflow_app.py": "thin adapter over os-ken: tested by "
                                  "tests/integration/test_controller_fabric.py",
    "controller/scheduler.py": "flap timers: tests/controller/test_executor.py",
    "traffic/core/clock.py": "the clocks (FakeClock drives every core test)",
    "traffic/workload/comm.py": "the communicator interface and the in-memory hub: "
                       "tests/traffic/workload/test_collectives_*.py",
    "traffic/core/memory.py": "the memory registry: tests/traffic/core/test_roce_rc.py and the "
                         "receiver tests",
    "traffic/core/messages.py": "the message records: the codec tests "
                           "(tests/traffic/core/test_codec_*.py)",
    "emulation/cli_common.py": "what the `mrclab` command families share (exit code, lazy "
                               "import, parser class, root check): tests/emulation/test_cli*.py",
    "emulation/cli_controller.py": "`mrclab link|deny|allow`: tests/emulation/test_cli.py, "
                                   "test_cli_fabric.py (fault bodies), test_cli_vocabulary.py "
                                   "and tests/model/test_faults.py",
    "emulation/cli_bench.py": "`mrclab bench`: tests/emulation/test_cli.py and "
                              "test_cli_fabric.py (bench all, --json, unknown names)",
    "emulation/config/scenario_faults.py": "the [[faults]] checks of scenario.py, split off by "
                                           "size: tests/emulation/config/test_scenario_*.py",
    "emulation/calibration/calibrate_cli.py": "`mrclab calibrate`: "
                                  "tests/emulation/calibration/test_calibrate.py",
    "emulation/network/check.py": "`mrclab fabric --check` on a real fabric: "
                          "tests/integration/test_fabric_lifecycle.py",
    "emulation/network/endpoint_process.py": "an endpoint in a fabric host (root): "
                                     "tests/integration/test_endpoint_fabric.py",
    "emulation/run/metrics_server.py": "the live metrics endpoint: "
                                   "tests/emulation/run/test_live_state.py",
    "emulation/network/ovs_service.py": "starting Open vSwitch (root): "
                                "tests/integration/test_fabric_lifecycle.py",
    "analysis/jsonl.py": "the JSONL reader: tests/analysis/test_timescale.py and every loader test",
}


def source_modules() -> list[str]:
    """Every shipped module but package __init__ files, as a path from the repository root."""
    return sorted(str(p.relative_to(REPO)) for pkg in PACKAGES for p in (REPO / pkg).rglob("*.py")
                  if p.name != "__init__.py")


def names_of_test_files() -> set[str]:
    return {p.name for p in (REPO / "tests").rglob("test_*.py")}


def untested(modules: list[str], test_files: set[str]) -> list[str]:
    """The modules no test file is named for (test_<module>.py or test_<module>_<aspect>.py)."""
    out = []
    for module in modules:
        stem = module.rsplit("/", 1)[-1].removesuffix(".py")
        pattern = re.compile(rf"test_{re.escape(stem)}(_\w+)?\.py")
        if not any(pattern.fullmatch(name) for name in test_files):
            out.append(module)
    return out


def test_every_source_module_has_a_test_file_of_its_name_or_a_reason():
    missing = [m for m in untested(source_modules(), names_of_test_files())
               if m not in UNTESTED_BY_NAME]
    assert not missing, ("no tests/.../test_<module>.py for these (add one at the module's "
                         "mirror location, or a reason to UNTESTED_BY_NAME):\n"
                         + "\n".join(missing))


def test_every_reason_still_applies():
    modules = source_modules()
    gone = [m for m in UNTESTED_BY_NAME if m not in modules]
    tested = [m for m in UNTESTED_BY_NAME
              if m in modules and m not in untested([m], names_of_test_files())]
    assert not gone, f"UNTESTED_BY_NAME names modules that do not exist: {gone}"
    assert not tested, f"these have a test file of their name now; drop their entry: {tested}"


def test_the_name_rule():
    files = {"test_codec_props.py", "test_scenario.py", "test_evs_denied.py"}
    assert untested(["traffic/core/codec.py", "emulation/config/scenario.py", "traffic/core/evs.py"], files) == []
    # a prefix of another module's name is not a test of it, nor is a longer name
    assert untested(["emulation/config/scenario_schema.py", "traffic/ev.py", "traffic/core/rtt.py"],
                    files) == ["emulation/config/scenario_schema.py", "traffic/ev.py", "traffic/core/rtt.py"]
