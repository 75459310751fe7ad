"""``pip download`` in a child process: the one way optfuzz fetches a distribution from the
package index (the corpus's pinned wheels, a target's sdist for an instrumented build), so
that the user's pip configuration applies (index URL, extra indexes, proxies, certificates,
``pip.conf`` and ``PIP_*`` variables), and pip checks the hashes the index publishes.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from fuzzer.errors import InputError

#: Seconds one ``pip download`` may take.
PIP_TIMEOUT = 600.0


def pip_download(requirement: str, dest: Path, options: Sequence[str] = (),
                 timeout: float = PIP_TIMEOUT) -> None:
    """Run ``pip download --no-deps [options] requirement`` with this interpreter's pip,
    into the folder ``dest`` (pip creates it; a file already there that matches the index
    is not fetched again).

    Args:
        requirement: what to download, e.g. ``"onnxoptimizer==0.3.13"``.
        dest: the folder the archive lands in.
        options: more pip options, e.g. ``["--no-binary", NAME]`` for an sdist or
            ``["--no-index", "--find-links", DIR]`` for a local folder.
        timeout: seconds pip may take.

    Raises:
        InputError: pip failed (the message ends with the last line pip wrote: no network,
            no such version, a hash mismatch) or took over ``timeout`` seconds.
    """
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps",
           "--disable-pip-version-check", "--quiet", "--dest", str(dest), *options,
           requirement]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise InputError(f"pip download {requirement} took over {timeout:.0f} s") from None
    if proc.returncode != 0:
        raise InputError(f"pip download {requirement} failed: {reason(proc)}")


def reason(proc: subprocess.CompletedProcess) -> str:
    """Why pip failed, in one line: the first sentence of its last ``ERROR:`` line (a hash
    mismatch goes on with the hashes), else its last line."""
    lines = [ln.strip() for ln in (proc.stderr or proc.stdout or "").splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("ERROR:")]
    if errors:
        return errors[-1].split(". ", 1)[0]
    return lines[-1] if lines else f"exit status {proc.returncode}"
