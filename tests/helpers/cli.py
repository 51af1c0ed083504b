"""Running `mrclab` in-process in tests: exit code and captured output, as a shell would see."""
from emulation import cli


def run_mrclab(capsys, *argv) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `mrclab argv...`; argparse's SystemExit counts as an exit."""
    try:
        rc = cli.main(list(argv))
    except SystemExit as e:
        rc = e.code
    out = capsys.readouterr()
    return rc, out.out, out.err
