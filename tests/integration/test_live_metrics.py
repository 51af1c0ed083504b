"""[options] metrics_port: a short real MRC run serves its live counters in Prometheus' text
format on 127.0.0.1 to whoever has the fabric's API token while it runs (scraped from a second
thread during the run), the counters
move with the run (iterations, goodput per plane from the controller's port counters, EV states,
the fault as it fires), and the port is closed when the run ends."""
import re
import socket
import threading
import time
import urllib.request

import pytest

from controller import api_auth
from emulation.run import runner
from model.ports import API_PORT
from tests.helpers.scenario_texts import LIVE_METRICS as SCENARIO
from tests.integration.fidelity_guard import judged_by_fidelity

pytestmark = pytest.mark.integration


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def value(body: str, pattern: str) -> list[float]:
    return [float(m.group(1)) for m in re.finditer(pattern + r" ([0-9.e+-]+)$", body, re.M)]


def test_metrics_endpoint_is_scraped_during_a_real_run(tmp_path):
    port = free_port()
    scn = tmp_path / "metrics-it.toml"
    scn.write_text(SCENARIO.replace("{port}", str(port)))
    scrapes: list[str] = []
    done = threading.Event()

    def scrape():
        while not done.is_set():
            try:
                token = api_auth.read_token(api_auth.token_path(API_PORT))
                request = urllib.request.Request(f"http://127.0.0.1:{port}/metrics",
                                                 headers={"Authorization": f"Bearer {token}"})
                with urllib.request.urlopen(request, timeout=2) as r:
                    scrapes.append(r.read().decode())
            except (OSError, api_auth.TokenError):      # not up yet (no fabric, no token)
                pass
            time.sleep(0.5)

    scraper = threading.Thread(target=scrape, daemon=True)
    scraper.start()
    try:
        rc = runner.main([str(scn), "--out-dir", str(tmp_path / "results")])
    finally:
        done.set()
        scraper.join(5)
    (run_dir,) = (tmp_path / "results").iterdir()
    # What the scrapes caught depends on when the scraper's thread ran against the run's
    # progress (the last scrape every 0.5 s): a starved run can end between two scrapes that
    # saw too little, or before the scraper got a core.
    with judged_by_fidelity(run_dir / "mrc"):
        assert rc == 0
        assert len(scrapes) >= 3, "the endpoint answered fewer than 3 scrapes during the run"
        last = scrapes[-1]
        assert max(value(last, r'mrclab_iterations_done\{transport="mrc",host="h\d"\}')) >= 8
        assert value(last, r'mrclab_faults_fired_total\{transport="mrc"\}') == [1.0]
        # the T0 delivered traffic to the hosts on a plane: goodput per plane, from port counters
        per_plane = r'mrclab_plane_goodput_mbit\{transport="mrc",host="h\d",plane="\d"\}'
        assert any(v > 0 for s in scrapes for v in value(s, per_plane))
        per_host = r'mrclab_goodput_mbit\{transport="mrc",host="h\d"\}'
        assert any(v > 0 for s in scrapes for v in value(s, per_host))
        # h0's plane-1 NIC link went down: EVs of plane 1 left GOOD on some QP
        assert value(last, r'mrclab_evs\{transport="mrc",path="p\ds\d",state="GOOD"\}')
        not_good = (r'mrclab_evs\{transport="mrc",path="p1s0",'
                    r'state="(?:ASSUMED_BAD|DENIED|SUSPECT)"\}')
        assert sum(value(last, not_good)) >= 1
    with pytest.raises(OSError):      # the run ended: nothing listens any more
        urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2)
