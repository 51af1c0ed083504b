"""model/threads.py: a thread name Linux would cut (15 bytes kept, comm(5)) would never be found
by the name it was given."""
from model.threads import SAMPLER_THREAD_NAME, THREAD_NAME_MAX


def test_the_sampler_name_survives_linux_s_limit():
    assert THREAD_NAME_MAX == 15
    assert 0 < len(SAMPLER_THREAD_NAME.encode()) <= THREAD_NAME_MAX
