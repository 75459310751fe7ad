"""One campaign per folder: a second one is refused while the first runs, naming its owner; a
lock left by a dead campaign is taken over."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fuzzer.store.lock import LOCK_FILE, CampaignLock, CampaignLocked, LockOwner
from tests.test_cli_check import assert_one_line_error, optfuzz

WAIT = 60.0  # seconds: hang guard while waiting for a campaign to start or stop


def dead_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def write_owner(folder: Path, pid: int, host: str | None = None) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    record = {"pid": pid, "host": host or socket.gethostname(), "started": "2026-01-01T00:00:00Z"}
    (folder / LOCK_FILE).write_text(json.dumps(record))


@contextlib.contextmanager
def flock_held(path: Path) -> Iterator[None]:
    """Another process holds the flock on ``path`` meanwhile."""
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, time\n"
         f"f = open({str(path)!r}, 'a')\n"
         "fcntl.flock(f, fcntl.LOCK_EX)\nprint('held', flush=True)\ntime.sleep(60)"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        yield
    finally:
        holder.kill()
        holder.wait()


def recorded_pid(folder: Path) -> int | None:
    try:
        return json.loads((folder / LOCK_FILE).read_text())["pid"]
    except (OSError, ValueError, KeyError):
        return None


def test_a_held_lock_refuses_a_second_holder_and_names_it(tmp_path):
    with CampaignLock(tmp_path) as first:
        owner = first.owner()
        assert owner == LockOwner(os.getpid(), socket.gethostname(), owner.started)
        with pytest.raises(CampaignLocked) as refused:
            CampaignLock(tmp_path).acquire()
        message = str(refused.value)
        assert f"pid {os.getpid()} on host {socket.gethostname()}" in message
        assert f"started {owner.started}" in message and "\n" not in message
    assert not (tmp_path / LOCK_FILE).exists()  # released: a live lock file marks a campaign
    with CampaignLock(tmp_path):
        pass


def test_a_stale_lock_of_a_dead_pid_is_taken_over(tmp_path):
    write_owner(tmp_path, dead_pid())
    with CampaignLock(tmp_path):
        assert recorded_pid(tmp_path) == os.getpid()


def test_optfuzz_fuzz_takes_over_a_stale_lock(tmp_path):
    out = tmp_path / "crashes"
    write_owner(out, dead_pid())
    proc = optfuzz("fuzz", "--target", "fake", "--source", "generated", "--passes", "clean",
                   "--max-cases", "2", "--jobs", "1", "--quiet", "--out", str(out))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads((out / "campaign.json").read_text())["cases"] == 2
    assert not (out / LOCK_FILE).exists()


def test_a_dead_campaign_whose_orphans_hold_the_flock_is_taken_over(tmp_path):
    """A killed campaign's forked workers keep its flock; its recorded pid is gone."""
    write_owner(tmp_path, dead_pid())
    with flock_held(tmp_path / LOCK_FILE), CampaignLock(tmp_path):
        assert recorded_pid(tmp_path) == os.getpid()


def test_a_live_lock_on_another_host_is_respected(tmp_path):
    write_owner(tmp_path, 1, host="elsewhere.example")
    with flock_held(tmp_path / LOCK_FILE), \
            pytest.raises(CampaignLocked, match="pid 1 on host elsewhere.example"):
        CampaignLock(tmp_path).acquire()


def test_a_second_campaign_on_a_folder_is_refused_while_the_first_runs(tmp_path):
    out = tmp_path / "crashes"
    args = ["fuzz", "--target", "fake", "--source", "generated", "--passes", "clean",
            "--fixed-passes", "--jobs", "1", "--quiet", "--no-localize", "--out", str(out)]
    first = subprocess.Popen([sys.executable, "-m", "fuzzer", *args, "--seconds", "120"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + WAIT
        while recorded_pid(out) != first.pid:
            assert first.poll() is None and time.monotonic() < deadline, "no lock taken"
            time.sleep(0.1)
        for extra in (["--resume"], []):
            second = optfuzz(*args, "--max-cases", "1", *extra)
            assert_one_line_error(second)
            assert f"pid {first.pid} on host {socket.gethostname()}, started" in second.stderr
        assert recorded_pid(out) == first.pid
        first.send_signal(signal.SIGINT)  # Ctrl-C: a clean stop releases the folder
        assert first.wait(timeout=WAIT) == 0, first.stderr.read()
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert not (out / LOCK_FILE).exists()
    assert optfuzz(*args, "--max-cases", "1", "--resume").returncode == 0
