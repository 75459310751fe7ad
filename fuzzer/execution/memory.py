"""Resident memory of processes, read from ``/proc`` (Linux): what worker recycling and the
soak benchmark measure."""

from __future__ import annotations

import ctypes
import functools
import os
from pathlib import Path
from typing import Any

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def rss_bytes(pid: int | str = "self") -> int | None:
    """Resident set size of process ``pid`` in bytes (``/proc/<pid>/statm``), or None where
    the process is gone or ``/proc`` cannot be read."""
    try:
        fields = Path(f"/proc/{pid}/statm").read_text().split()
    except (OSError, ValueError):
        return None
    return int(fields[1]) * _PAGE if len(fields) > 1 else None


def child_pids(pid: int) -> list[int]:
    """Process ids of every descendant of ``pid`` (``/proc/<pid>/task/*/children``), depth
    first; empty where ``/proc`` cannot be read."""
    found: list[int] = []
    todo = [pid]
    while todo:
        parent = todo.pop()
        for task in Path(f"/proc/{parent}/task").glob("*/children"):
            try:
                kids = [int(x) for x in task.read_text().split()]
            except (OSError, ValueError):
                continue
            found.extend(kids)
            todo.extend(kids)
    return found


#: glibc's mallopt parameter number of M_ARENA_MAX (malloc.h).
_M_ARENA_MAX = -8
#: malloc arenas a long-lived process keeps: each thread that allocates may otherwise get
#: an arena of its own (up to 8 per core), whose free pages, fragmented, stay resident; a
#: campaign starts threads all along (pebble's, retries, the finding thread), and its RSS
#: grew in steps until the arenas were capped (benchmarks/soak.py).
MALLOC_ARENAS = 2


def limit_malloc_arenas(count: int = MALLOC_ARENAS) -> None:
    """Cap the C heap's arenas of this process (and of the processes it forks later) at
    ``count`` (glibc ``mallopt(M_ARENA_MAX)``, as the ``MALLOC_ARENA_MAX`` variable would);
    does nothing without glibc."""
    libc = _libc()
    if libc is not None:
        libc.mallopt(_M_ARENA_MAX, count)


def release_free_memory() -> None:
    """Hand the C heap's free pages back to the system (glibc ``malloc_trim(0)``), so that
    a process's resident size follows what it holds, not the most it ever held (large
    models parsed and dropped leave free pages behind); does nothing without glibc."""
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)


@functools.lru_cache(maxsize=1)
def _libc() -> Any:
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.malloc_trim  # noqa: B018 (glibc only)
    except (OSError, AttributeError):
        return None
    return libc
