"""The TCP ports of a run's own controller on 127.0.0.1: Open vSwitch connects to OF_PORT
(OpenFlow), the runner and `mrclab link/deny/top` call API_PORT (the HTTP API). Stated here so
the fabric that opens them and the scenario check that keeps other listeners off them agree."""
from __future__ import annotations

OF_PORT = 6653          # IANA's OpenFlow port
API_PORT = 8787
CONTROLLER_PORTS = {OF_PORT: "the controller's OpenFlow port", API_PORT: "the controller's API port"}
