"""Ctrl-C during a campaign's case loop is a request read between two cases, never an
exception raised in the middle of handing a case to a worker."""

from __future__ import annotations

import os
import signal

import pytest

from fuzzer.campaign.interrupt import StopRequest


def _press() -> None:
    os.kill(os.getpid(), signal.SIGINT)


def test_a_press_in_the_loop_is_only_a_flag_until_the_loop_checks_it() -> None:
    before = signal.getsignal(signal.SIGINT)
    with StopRequest() as ctrl_c:
        ctrl_c.check()  # nothing pressed: no effect
        _press()  # handled at once, in this thread: no KeyboardInterrupt here
        assert ctrl_c.requested
        with pytest.raises(KeyboardInterrupt):
            ctrl_c.check()
    assert signal.getsignal(signal.SIGINT) is before


def test_once_the_loop_has_ended_a_press_raises_at_once() -> None:
    with StopRequest() as ctrl_c:
        ctrl_c.raising = True
        with pytest.raises(KeyboardInterrupt):
            _press()
