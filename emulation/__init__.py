"""Running experiments on an emulated fabric (the top layer).

    network/      the fabric's lifecycle: Mininet + Open vSwitch, host links, data-path
                  faults, trimming BPF, OVS service, clean-up, the endpoint processes
    config/       scenario and sweep files: schema, loading, validation, short versions
    run/          one run (runner, faults, progress, summary, run.json) and many (sweep),
                  live state (top, metrics endpoint)
    calibration/  the time scale applied to a run and `mrclab calibrate`
    benches/      `mrclab bench`
    cluster/      one scenario over several servers: placement, VXLAN links, preflight,
                  clean-up of every server (docs/cluster.md)
    cli.py        `mrclab`, the one command line: the argument tree and dispatch; the
                  families' options and handlers in cli_fabric.py (fabric, clean),
                  cli_controller.py (link, deny, allow), cli_bench.py (bench), shared parts
                  in cli_common.py; reference.py generates docs/reference.md
"""
