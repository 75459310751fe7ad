"""Replay results as a JUnit XML file (``optfuzz replay --junitxml FILE``), for a CI job.

One test suite per build replayed against (the installed one, or each ``--against`` SPEC),
one test case per bundle: a failure while the bundle still fails (or changed symptom, or
cannot run: :data:`fuzzer.triage.replay.FAILING`), skipped where it is untestable there, an
error where the build could not be installed, passed once fixed. Written with junitparser.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from fuzzer.triage.replay import FAILING

#: the status of a test case whose build could not be installed.
INSTALL_ERROR = "install-error"


@dataclass(frozen=True)
class JUnitCase:
    """One bundle's result against one build.

    Attributes:
        suite: the build (``installed`` or a SPEC).
        name: the bundle's id (or ``install`` for a build that could not be installed).
        classname: the bundle's target.
        status: a replay status, or :data:`INSTALL_ERROR`.
        message: what was seen, or why there is no verdict.
        seconds: how long the check took, where known.
    """

    suite: str
    name: str
    classname: str
    status: str
    message: str | None = None
    seconds: float | None = None


def write_junit(path: Path, cases: Iterable[JUnitCase], name: str = "optfuzz replay") -> None:
    """Write ``cases`` to ``path`` as JUnit XML (suites in the order first seen).

    Raises:
        OSError: the file cannot be written.
    """
    from junitparser import Error, Failure, JUnitXml, Skipped, TestCase, TestSuite

    suites: dict[str, TestSuite] = {}
    for case in cases:
        suite = suites.setdefault(case.suite, TestSuite(case.suite))
        test = TestCase(case.name, case.classname, case.seconds)
        text = case.message or case.status
        if case.status == INSTALL_ERROR:
            test.result = [Error(text, case.status)]
        elif case.status in FAILING:
            test.result = [Failure(text, case.status)]
        elif case.status == "untestable":
            test.result = [Skipped(text)]
        suite.add_testcase(test)
    xml = JUnitXml(name)
    for suite in suites.values():
        xml.add_testsuite(suite)
    xml.update_statistics()
    xml.write(str(path), pretty=True)
