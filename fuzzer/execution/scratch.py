"""The scratch folders of a sandbox's workers: each worker keeps its temporary files (tempfile
and ``TMPDIR``) in a folder of its own, named by its pid, under its sandbox's scratch folder.
A worker killed mid-case leaves nothing behind for long: its folder goes once it no longer
runs (:func:`sweep_dead`), the whole scratch folder on the sandbox's close, and the scratch
folders of sandboxes whose owner was killed before its close when the next sandbox starts
(:func:`new_scratch`).
"""

from __future__ import annotations

import os
import shutil
import tempfile

from fuzzer.execution.pool import process_exists

#: name of a sandbox's scratch folder in the temporary folder, before its owner's pid.
SCRATCH_PREFIX = "optfuzz-workers-"


def pid_namespace() -> int:
    """The inode of this process's pid namespace (``/proc/self/ns/pid``); 0 where the
    system shows none."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


def scratch_prefix() -> str:
    """A sandbox's scratch folder name up to its random part: :data:`SCRATCH_PREFIX`, the
    pid namespace (:func:`pid_namespace`) and this process's pid, dash-separated."""
    return f"{SCRATCH_PREFIX}{pid_namespace()}-{os.getpid()}-"


def sweep_orphans() -> None:
    """Remove the scratch folders that sandboxes of processes no longer running left in the
    temporary folder (a campaign or a Ray actor killed before its sandbox closed): those
    named with this pid namespace (:func:`scratch_prefix`; a container sharing the folder
    has its own) and a pid that no process has. A folder whose owner's pid runs again (a
    reused pid) waits for a later sweep; without a pid namespace nothing is swept."""
    namespace = pid_namespace()
    root = tempfile.gettempdir()
    try:
        entries = os.listdir(root) if namespace else []
    except OSError:
        return
    mine = f"{SCRATCH_PREFIX}{namespace}-"
    for entry in entries:
        owner = entry[len(mine):].split("-", 1)[0]
        if entry.startswith(mine) and owner.isdigit() and not process_exists(int(owner)):
            shutil.rmtree(os.path.join(root, entry), ignore_errors=True)


def new_scratch() -> str:
    """A new scratch folder in the temporary folder, named by :func:`scratch_prefix`, after
    :func:`sweep_orphans`; the caller removes it.

    Raises:
        OSError: the folder cannot be made.
    """
    sweep_orphans()
    return tempfile.mkdtemp(prefix=scratch_prefix())


def sweep_dead(scratch: str) -> None:
    """Remove the folders under ``scratch`` of workers that no longer run (killed for a
    timeout or dead by a signal: what they were writing is left there)."""
    try:
        entries = os.listdir(scratch)
    except OSError:
        return
    for entry in entries:
        if not entry.isdigit() or not process_exists(int(entry)):
            shutil.rmtree(os.path.join(scratch, entry), ignore_errors=True)


def enter(scratch: str) -> None:
    """In a worker: make its folder under ``scratch`` (named by its pid, as
    :func:`sweep_dead` expects) the folder of tempfile and of the child processes it
    starts (``TMPDIR``).

    Raises:
        OSError: the folder cannot be made.
    """
    folder = os.path.join(scratch, str(os.getpid()))
    os.makedirs(folder, exist_ok=True)
    tempfile.tempdir = os.environ["TMPDIR"] = folder
