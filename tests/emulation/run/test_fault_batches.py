"""Which due fault commands the run's scheduler sends together (run_faults.batches): the
nftables faults of one instant in one POST /faults, everything else alone, in file order."""
from emulation.config.scenario_faults import FaultEntry
from emulation.run import run_faults


def entry(*commands):
    return FaultEntry(at_s=None, at_iteration=8, commands=list(commands))


def loss(a, percent=1.0):
    return {"action": "gray_loss", "a": a, "b": "t0p0g0", "percent": percent}


def clear(a):
    return {"action": "gray_loss_clear", "a": a, "b": "t0p0g0"}


def down(a):
    return {"action": "link_down", "a": a, "b": "t0p0g0"}


def shape(due):
    return [[(index, cmd["action"], cmd["a"]) for index, _, cmd in run]
            for run in run_faults.batches(due)]


def test_a_clear_and_a_new_loss_due_together_go_out_as_one_batch():
    due = [(1, entry(clear("h0"), clear("h1"))), (2, entry(loss("h0"), loss("h1")))]
    assert shape(due) == [[(1, "gray_loss_clear", "h0"), (1, "gray_loss_clear", "h1"),
                           (2, "gray_loss", "h0"), (2, "gray_loss", "h1")]]


def test_a_link_down_goes_alone_and_splits_the_batch_around_it():
    due = [(0, entry(loss("h0"), down("h1"), loss("h2"), {"action": "ecn_mark", "a": "h3",
                                                          "b": "t0p0g0", "rate_mbit": 5}))]
    assert shape(due) == [[(0, "gray_loss", "h0")], [(0, "link_down", "h1")],
                          [(0, "gray_loss", "h2"), (0, "ecn_mark", "h3")]]
    assert shape([(0, entry(down("h0"), down("h1")))]) == [[(0, "link_down", "h0")],
                                                           [(0, "link_down", "h1")]]


def test_a_batch_holds_at_most_batch_max_commands():
    due = [(0, entry(*[loss(f"h{i}") for i in range(run_faults.BATCH_MAX + 1)]))]
    assert [len(run) for run in shape(due)] == [run_faults.BATCH_MAX, 1]
