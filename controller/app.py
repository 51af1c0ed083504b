"""The controller process: OpenFlow over TLS (os-ken) + fault executor + HTTP API on 127.0.0.1,
both open to the fabric's owner only (docs/security.md).

  python -m controller.app --spec-json FILE --routing srv6|ecmp [--dynamic-convergence-s X]
                           --of-port 6653 --api-port 8787 --fault-log FILE [--buckets N]
                           --token-file F --of-ca F --of-key F --of-cert F --endpoint-dir D

This module only wires the pieces and runs them:
  controller.service.FabricController   state + API backend, built from the command line
  controller.openflow_app               the os-ken adapter, handed the controller at start
  controller.api.ApiServer              HTTP/JSON API in front of the controller
Pure logic lives in controller.routing / routing_state (flow rules) and controller.actions /
planner (faults -> commands); controller.executor and scheduler run what they return.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading

from os_ken import cfg

from controller import api_auth, openflow_app
from controller import routing as R
from controller.api import ApiServer
from controller.servers import RemoteNodes
from controller.service import FabricController
from model.topology import FabricSpec, Topology

__all__ = ["FabricController", "main"]

LOG = logging.getLogger("mrclab.controller")
CLEANUP_TIMEOUT_S = 5.0


def _load_spec(path: str) -> FabricSpec:
    with open(path) as f:
        data = json.load(f)
    if isinstance(data, dict) and "fabric" in data and isinstance(data["fabric"], dict):
        data = data["fabric"]
    return FabricSpec.from_dict(data)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m controller.app", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--spec-json", required=True, help="FabricSpec as JSON (to_dict())")
    parser.add_argument("--routing", choices=R.ROUTING_MODES, required=True)
    parser.add_argument("--dynamic-convergence-s", type=float, default=None)
    parser.add_argument("--of-port", type=int, default=6653)
    parser.add_argument("--api-port", type=int, default=8787)
    parser.add_argument("--fault-log", default=None)
    parser.add_argument("--token-file", required=True,
                        help="root-only file holding the API token (controller.api_auth)")
    parser.add_argument("--of-ca", required=True, help="CA certificate of the switches (PEM)")
    parser.add_argument("--of-key", required=True, help="the controller's TLS key (PEM)")
    parser.add_argument("--of-cert", required=True, help="the controller's certificate (PEM)")
    parser.add_argument("--endpoint-dir", required=True,
                        help="the only directory whose control sockets POST /endpoints takes")
    parser.add_argument("--buckets", type=int, default=None, help="ECMP buckets (power of two)")
    parser.add_argument("--of-host", default="127.0.0.1",
                        help="the address OpenFlow listens on: this machine's loopback, or "
                             "0.0.0.0 for a fabric whose switches are also on other servers")
    parser.add_argument("--remote-nodes-json", default=None,
                        help="a fabric over several servers: {node: server} of the nodes not on "
                             "this machine, whose fault commands run there over ssh")
    parser.add_argument("--log-level", default="INFO")
    return parser


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(),
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        spec = _load_spec(args.spec_json)
        topo = Topology(spec)
        controller = FabricController(topo, args.routing, args.dynamic_convergence_s,
                                      args.fault_log, args.buckets,
                                      endpoint_dir=args.endpoint_dir,
                                      remote=RemoteNodes.from_file(args.remote_nodes_json, topo))
        token = api_auth.read_token(args.token_file)
    except (OSError, ValueError, api_auth.TokenError) as err:
        print(f"controller: {err}", file=sys.stderr)
        return 2
    if args.fault_log:
        open(args.fault_log, "a").close()

    cfg.CONF(args=[], project="os_ken")
    cfg.CONF.set_override("ofp_listen_host", args.of_host)
    # TLS only, client certificates required: os-ken then listens on the SSL port alone, and a
    # peer without a switch certificate signed by this fabric's CA never gets to say its dpid.
    cfg.CONF.set_override("ofp_ssl_listen_port", args.of_port)
    cfg.CONF.set_override("ofp_tcp_listen_port", args.of_port + 10000 if args.of_port < 55535
                          else args.of_port - 10000)
    cfg.CONF.set_override("ctl_privkey", args.of_key)
    cfg.CONF.set_override("ctl_cert", args.of_cert)
    cfg.CONF.set_override("ca_certs", args.of_ca)

    api = ApiServer(controller, args.api_port, token).start()
    LOG.info("API on 127.0.0.1:%d, OpenFlow on %s:%d, routing %s",
             api.port, args.of_host, args.of_port, args.routing)

    stopping = threading.Lock()

    def _cleanup_and_exit(code: int) -> None:
        """clear_all + api.stop, then os._exit: os-ken's run_apps cannot be unwound from a
        signal (its hub threads have no kill()), so nothing after this may depend on it."""
        if not stopping.acquire(blocking=False):
            return
        worker = threading.Thread(target=lambda: (controller.clear_all(), api.stop()),
                                  daemon=True, name="mrclab-shutdown")
        worker.start()
        worker.join(CLEANUP_TIMEOUT_S)
        if worker.is_alive():
            LOG.error("cleanup did not finish within %.0f s; exiting anyway", CLEANUP_TIMEOUT_S)
        else:
            LOG.info("controller stopped")
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)

    signal.signal(signal.SIGTERM, lambda signum, frame: _cleanup_and_exit(0))
    try:
        openflow_app.run(controller)
    except KeyboardInterrupt:
        pass
    _cleanup_and_exit(0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
