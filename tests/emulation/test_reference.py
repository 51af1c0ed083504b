"""The generated reference (docs/reference.md, emulation/reference.py): the committed file is
what the code renders now, and it lists every command and scenario table."""
from emulation import reference
from tests.helpers.paths import REPO


def test_generated_reference_is_up_to_date():
    assert (REPO / "docs" / "reference.md").read_text() == reference.render(), \
        "docs/reference.md is stale: run `.venv/bin/python -m emulation.reference --write`"


def test_reference_lists_every_command_and_key():
    text = reference.render()
    for heading in ("### `mrclab run`", "### `mrclab link loss`", "### `mrclab bench cpu`",
                    "### `mrclab scenario keys`", "### [fabric]", "### [mrc.qp]"):
        assert heading in text, heading
    assert "| host_link_mbit | number |" in text
