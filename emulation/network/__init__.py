"""The emulated fabric: built, shaped, faulted, checked and torn down.

    fabric                       lifecycle (lock, clean, build, shape, control, tear down)
    hostnet                      host and link commands as argv lists (pure)
    switchqueue, trimming, vqueue, bpf/   switch queues, in-fabric trimming and ECN
    ovs_service, ovs_sndbuf      Open vSwitch running, and its socket buffers
    control_secrets              the control plane's token and TLS material
    endpoint_process             one endpoint process in a host, over its control socket
    path_monitor                 the run's path monitor (localise, deny)
    check, pathcheck             `mrclab fabric --check` and its probe sender/counter
    cleanup                      what a crashed fabric left behind
"""
