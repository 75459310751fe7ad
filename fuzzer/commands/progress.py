"""Progress of a command's long work through a sandbox (``check``, ``reduce``,
``localize``): a transient status line on the error output that says what the command
does, how long it has run, how many runs have ended and which stage the running case is in
(``optimize``, ``reference`` ...), refreshed twice a second by a thread of its own. Rich's
status spinner draws it, and only on a terminal: piped or captured output stays clean.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

#: seconds between two refreshes of the status line.
REFRESH = 0.5


def activity_text(label: str, seconds: float, finished: int, stages: list[str]) -> str:
    """The status line: ``label``, ``seconds`` elapsed (whole seconds), the runs ended and
    the stages the running cases are in."""
    runs = f", {finished} run(s) done" if finished else ""
    now = f", now: {', '.join(sorted(set(stages)))}" if stages else ""
    return f"{label} ({seconds:.0f} s{runs}{now})"


@contextmanager
def sandbox_activity(sandbox: Any, label: str) -> Iterator[None]:
    """Show :func:`activity_text` of ``sandbox`` (a :class:`fuzzer.execution.sandbox.Sandbox`)
    while the block runs; the line disappears when it ends."""
    from rich.console import Console

    console = Console(stderr=True)
    if not console.is_terminal:
        yield
        return
    started = time.monotonic()
    stop = threading.Event()
    with console.status(label) as status:
        def refresh() -> None:
            while not stop.wait(REFRESH):
                status.update(activity_text(label, time.monotonic() - started,
                                            sandbox.finished, sandbox.busy_stages()))

        thread = threading.Thread(target=refresh, name="progress", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
