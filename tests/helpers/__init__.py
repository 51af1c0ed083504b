"""Builders, fakes and shared data of the tests: frames and run directories built by hand, fake
ports and switches, the simulated network, scenario texts. Test modules import these, never each
other (tests/house/test_test_imports.py)."""
