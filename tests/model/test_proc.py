"""model.proc: the one command runner. A failure must raise the caller's type with the command
line and what the command said, never pass silently (Mininet's habit this project refuses)."""
import pytest

from model.proc import CommandFailed, in_netns, run_checked


class DomainError(RuntimeError):
    pass


def test_stdout_of_a_successful_command():
    assert run_checked(["sh", "-c", "printf 'a\\nb'"]) == "a\nb"


def test_nonzero_exit_names_command_code_and_stderr():
    with pytest.raises(CommandFailed) as err:
        run_checked(["sh", "-c", "echo nope >&2; exit 7"], what="shaping h0-p0")
    msg = str(err.value)
    assert msg.startswith("shaping h0-p0: command failed (exit 7): sh -c")
    assert msg.endswith(": nope")


def test_stdout_is_reported_when_stderr_is_empty():
    with pytest.raises(CommandFailed, match=r": only-stdout$"):
        run_checked(["sh", "-c", "echo only-stdout; exit 1"])


def test_caller_chooses_the_exception_type():
    with pytest.raises(DomainError):
        run_checked(["false"], error=DomainError)
    with pytest.raises(DomainError, match="command not found: /nonexistent/tool"):
        run_checked(["/nonexistent/tool"], error=DomainError)


def test_timeout_raises_instead_of_hanging():
    with pytest.raises(CommandFailed, match=r"timed out after 0.2s: sleep 5"):
        run_checked(["sleep", "5"], timeout=0.2)


def test_netns_prefix():
    assert in_netns(None, ["ip", "link"]) == ["ip", "link"]
    assert in_netns(4242, ["ip", "link"]) == ["nsenter", "-t", "4242", "-n", "ip", "link"]
