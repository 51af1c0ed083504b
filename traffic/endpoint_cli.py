"""The endpoint process's entry point:  python -m traffic.endpoint_cli --config FILE

Kept out of traffic/endpoint.py because that module is compiled by `make setup`
(traffic/compiled.py), and Python cannot run a compiled module with -m ("No code object
available"); this module is never compiled, so the command works with either build."""
import sys

from traffic.endpoint import main

if __name__ == "__main__":
    sys.exit(main())
