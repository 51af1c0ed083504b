"""The endpoint process's entry point:  python -m traffic.nic.endpoint_cli --config FILE

Kept out of traffic/nic/endpoint.py because that module is compiled by `make setup`
(traffic/compiled.py), and Python cannot run a compiled module with -m ("No code object
available"); this module is never compiled, so the command works with either build. main()
lives here for the same reason: it runs once per process, not per packet."""
import argparse
import signal
import sys

from traffic.nic.control import ControlServer
from traffic.nic.endpoint import Endpoint
from traffic.nic.endpoint_support import ConfigError, EndpointConfig


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m traffic.nic.endpoint_cli",
                                     description="MRC endpoint process of one host")
    parser.add_argument("--config", required=True, help="endpoint config (JSON or TOML)")
    args = parser.parse_args(argv)
    try:
        config = EndpointConfig.load(args.config)
    except ConfigError as e:
        print(f"endpoint: {e}", file=sys.stderr)
        return 2
    ep = Endpoint(config)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    server = ControlServer(ep, config.control_socket) if config.control_socket else None
    try:
        while not stop and not (server and server.shutdown_requested):
            ep.run_once(0.05)
    finally:
        if server:
            server.close()
        ep.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
