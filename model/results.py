"""Where runs are written and looked up: `mrclab run` and `mrclab sweep` write under
results_dir() by default, and the name `latest` (analyze, notebook, wireshark, compare, top)
means the newest run there. It is the checkout's results/ whatever the working directory, so a
command given from elsewhere finds the same runs; MRCLAB_RESULTS_DIR names another place."""
from __future__ import annotations

import os
from pathlib import Path

ENV = "MRCLAB_RESULTS_DIR"
CHECKOUT_RESULTS = Path(__file__).resolve().parents[1] / "results"


def results_dir() -> Path:
    return Path(os.environ.get(ENV) or CHECKOUT_RESULTS)
