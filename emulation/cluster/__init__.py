"""One scenario over several servers, on Mininet's cluster edition (mininet.examples.cluster).

    placement    which server holds each switch and host; the links that cross servers (pure)
    options      `mrclab run --servers/--placement` and the scenario's [cluster]: the placement
                 a run uses, printed before it starts
    vxlan        the commands of a VXLAN tunnel between two servers (pure)
    vxlan_link   Mininet's cluster RemoteLink with VXLAN tunnels (this kernel has no GRE)
    preflight    what every server needs (ssh, sudo, Open vSwitch, Mininet, VXLAN, Python, the
                 same commit, a management MTU that carries a tunnelled frame), said per server
    remote       `mrclab clean --servers`: every server's own clean-up, over ssh
    server_commands  commands on a server: here as they are, elsewhere over ssh as root, a
                 step's commands in one batch per server
    fabric_servers   the fabric's view of its servers: each node's and port's server, the
                 Mininet classes that put them there, the control plane's per-server steps
    server_clock a server's clock against this machine's: ping-pong exchanges over ssh
The clock alignment's arithmetic is model/clockalign.py's (the analysis applies it too).
"""
