"""A bundle's repro.py run in an environment, and what its exit status and output say.

The repro.py that runs is the bundle's, rendered in that environment (:mod:`~.probe`), so
its call of the target is written for that build (onnxslim's skipped patterns are that
release's own, not those of the release the bundle was found with); it runs in a temporary
folder beside links to the bundle's files, which it only reads.

repro.py (:mod:`fuzzer.report.repro`) exits 1 while the bundle's symptom shows, 0 when it does
not, 2 when the test cannot run there (a missing package, an original model that does not
load or run), and prints ``expected symptom: <s>; observed: <what it saw>`` (``none`` when
the run was clean). The verdict uses the replay's words
(:data:`fuzzer.triage.replay.REPLAY_STATUSES`): ``fails`` (exit 1), ``fixed`` (exit 0, nothing
observed), ``changed`` (exit 0 with another symptom observed, or repro.py died or outlived its
time), ``untestable`` (exit 2).
"""

from __future__ import annotations

import re
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from fuzzer.report.repro import CANNOT_RUN, FIXED, REPRODUCES
from fuzzer.upstream.environments import Environment

#: seconds repro.py may take beyond twice its child's timeout (the interpreter and the
#: imports, twice).
GRACE = 60.0

#: the line in which repro.py says what it expected and what it saw.
_OBSERVED = re.compile(r"^expected symptom: (?P<expected>[^;]*); observed: (?P<seen>.*)$", re.M)


@dataclass(frozen=True)
class Verdict:
    """What one check of a bundle against one build showed.

    Attributes:
        status: ``fails``, ``fixed``, ``changed`` or ``untestable``.
        version: the target's version in that build ("" where unknown).
        observed: the first symptom repro.py observed, or None.
        message: repro.py's line about what it saw, or why there is no verdict.
        seconds: how long the check took.
        unsupported: whether the build lacks what the test needs (a pass the bundle runs,
            or a module of its own that optfuzz's adapter imports), not only this run.
    """

    status: str
    version: str
    observed: str | None
    message: str | None
    seconds: float = 0.0
    unsupported: bool = False


def untestable(version: str, message: str, unsupported: bool = False) -> Verdict:
    """The verdict of a check that could not be made, for ``message``."""
    return Verdict("untestable", version, None, message, unsupported=unsupported)


def run_repro(env: Environment, bundle: Path, script: str, version: str,
              timeout: float) -> Verdict:
    """Run repro.py (text ``script``, rendered with a child timeout of ``timeout`` seconds)
    on the files of ``bundle`` with ``env``'s python and judge it; ``version`` is the
    target's version there.

    A repro.py that outlives twice ``timeout`` and :data:`GRACE` seconds is killed and
    judged ``changed``.

    Raises:
        OSError: the temporary folder cannot be made.
    """
    start = time.monotonic()
    limit = 2 * timeout + GRACE
    with tempfile.TemporaryDirectory(prefix="optfuzz-upstream-") as folder:
        for item in bundle.iterdir():
            if item.name != "repro.py":
                (Path(folder) / item.name).symlink_to(item.resolve())
        (Path(folder) / "repro.py").write_text(script)
        try:
            proc = env.run(["repro.py"], timeout=limit, cwd=Path(folder))
        except subprocess.TimeoutExpired:
            return Verdict("changed", version, None, f"repro.py did not finish in {limit:g} s",
                           time.monotonic() - start)
    return judge(proc.returncode, proc.stdout, proc.stderr, version, time.monotonic() - start)


def judge(code: int, out: str, err: str, version: str, seconds: float = 0.0) -> Verdict:
    """The verdict of a repro.py run that exited with ``code`` and printed ``out`` and
    ``err``."""
    said = _OBSERVED.search(out)
    seen = said.group("seen").strip() if said else ""
    line = said.group(0).strip() if said else _last_line(out, err)
    if code == REPRODUCES:
        return Verdict("fails", version, said.group("expected").strip() if said else None,
                       line, seconds)
    if code == FIXED and seen == "none":
        return Verdict("fixed", version, None, None, seconds)
    if code == CANNOT_RUN:
        return Verdict("untestable", version, None, line, seconds)
    if code == FIXED and seen:
        return Verdict("changed", version, seen.split(":", 1)[0].strip(), line, seconds)
    return Verdict("changed", version, None, f"repro.py exited with {code}: {line}", seconds)


def _last_line(*texts: str) -> str:
    lines = [ln.strip() for text in texts for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else "(no output)"
