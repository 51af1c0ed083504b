"""The one results directory (model/results.py): the checkout's results/ from any working
directory, MRCLAB_RESULTS_DIR when set."""
from model import results
from tests.helpers.paths import REPO


def test_the_checkouts_results_whatever_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.delenv(results.ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    assert results.results_dir() == REPO / "results"


def test_the_environment_names_another_place(tmp_path, monkeypatch):
    monkeypatch.setenv(results.ENV, str(tmp_path / "elsewhere"))
    assert results.results_dir() == tmp_path / "elsewhere"
