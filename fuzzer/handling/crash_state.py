"""Crash states of native crashes: a new crash that names no site of its own (a signal, an
impossible allocation: :func:`fuzzer.findings.signature.siteless`, or a killed worker) is
run once more on the target's sanitize build, and where AddressSanitizer or
UndefinedBehaviorSanitizer reports an error there, the report's crash type and top frames
in the target's own sources become the bundle's crash state and its key's signature.

ClusterFuzz keys crashes the same way (crash type plus the top three frames, its "crash
state"), and runs the sanitizer build on every crash; here the campaign runs the plain build
at full speed and pays the sanitizer's cost (a fork server that preloads the ASan runtime
and imports the build, about two cases a second) only for the new root causes among its
native crashes. One memory fault reached from two passes has one crash state, so it is one
bundle, whichever pass the culprit search names on each model.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from fuzzer.errors import InputError
from fuzzer.execution.case import TestCase
from fuzzer.execution.sandbox import Sandbox, SandboxError
from fuzzer.findings.rootcause import crash_state_key
from fuzzer.findings.signature import siteless
from oracles import symptom
from oracles.base import Finding

#: how many times a plain run's timeout a case may take on the sanitize build (ASan and UBSan
#: slow a C++ optimizer several times over).
SANITIZED_SLOWDOWN = 5.0


@dataclass(frozen=True)
class CrashState:
    """What a sanitizer said of a crash.

    Attributes:
        tool: ``AddressSanitizer`` or ``UndefinedBehaviorSanitizer``.
        kind: the crash type (``heap-buffer-overflow``, ``attempting double-free``).
        frames: the crash state, the top frames' function names (at most
            :data:`oracles.sanitizer.STATE_FRAMES`), innermost first.
        location: ``file:line`` of the first frame in the target's sources ("" if none).
        headline: the report's first line.
    """

    tool: str
    kind: str
    frames: tuple[str, ...]
    location: str
    headline: str

    def key(self, target: str) -> str:
        """The root-cause key of a crash of ``target`` with this state
        (:func:`fuzzer.findings.rootcause.crash_state_key`)."""
        return crash_state_key(target, self.kind, self.frames, self.location)

    def to_json(self) -> dict[str, Any]:
        """The ``crash_state`` object of meta.json."""
        return {"tool": self.tool, "kind": self.kind, "frames": list(self.frames),
                "location": self.location, "headline": self.headline}

    @classmethod
    def of_finding(cls, finding: Finding) -> CrashState:
        """The crash state in a sanitizer finding's details (``oracles.sanitizer``)."""
        detail = finding.detail
        location = detail.get("file") or ""
        if location and detail.get("line"):
            location = f"{location}:{detail['line']}"
        return cls(tool=str(detail.get("tool", "")), kind=str(detail.get("kind", "")),
                   frames=tuple(detail.get("state") or ()), location=location,
                   headline=str(detail.get("headline", "")))


def native_crash(finding: Finding) -> bool:
    """Whether ``finding`` is a crash whose own message names no site: a worker killed by a
    signal or ended (its details name the signal) or a siteless exception."""
    record = symptom(finding.symptom)
    return record.fault == "crash" and record.build is None and \
        ("signal" in finding.detail or siteless(finding))


class CrashWitness:
    """Runs cases on a target's sanitize build, in a one-worker sandbox started on first use.

    Args:
        runtime: the :class:`fuzzer.builds.sanitizer.SanitizerRuntime` of the build.
        timeout: seconds one case may take there (a sanitized run is several times slower
            than a plain one).
    """

    def __init__(self, runtime: Any, timeout: float) -> None:
        self.runtime = runtime
        self.timeout = timeout
        self.runs = 0
        self._sandbox: Sandbox | None = None
        self._broken: str | None = None

    @classmethod
    def for_target(cls, target: Any, timeout: float) -> CrashWitness | None:
        """The witness of ``target``'s sanitize build, or None where it has none here (no
        finished ``sanitize`` build, or GCC's sanitizer runtime missing). A target written
        in Python runs as installed under the runtime (see
        :func:`fuzzer.builds.sanitizer_build`)."""
        from fuzzer.builds import sanitizer_build
        from fuzzer.builds.sanitizer import sanitizer_runtime

        try:
            return cls(sanitizer_runtime(sanitizer_build(target)), timeout)
        except InputError:
            return None

    def state_of(self, case: TestCase, passes: list[str] | None,
                 finding: Finding) -> CrashState | None:
        """The crash state of ``finding``, a finding of ``case`` with the minimal pass
        subsequence ``passes`` (None: the case's own configuration), where it is a native
        crash (:func:`native_crash`); None for another finding."""
        if not native_crash(finding):
            return None
        if passes is not None:
            from fuzzer.targets import get_target

            target = get_target(case.target)
            case = dataclasses.replace(case, config=target.with_passes(case.config, passes))
        return self.state(case)

    def state(self, case: TestCase) -> CrashState | None:
        """The crash state of ``case`` on the sanitize build: the first sanitizer finding
        of its run there, or None (no report: the crash is no memory error the sanitizers
        see, or the witness could not run)."""
        if self._broken is not None:
            return None
        try:
            if self._sandbox is None:
                self._sandbox = Sandbox(1, self.timeout, None, sanitizer=self.runtime)
            result = self._sandbox.run(case)
        except (SandboxError, InputError, OSError) as exc:
            self._broken = str(exc)
            return None
        self.runs += 1
        found = next((f for f in result.findings if symptom(f.symptom).build == "sanitize"),
                     None)
        return CrashState.of_finding(found) if found is not None else None

    def close(self) -> None:
        """Stop the sanitized worker (calling it again does nothing)."""
        if self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None


class Witnesses:
    """A :class:`CrashWitness` per target name, made on first use for a target with native
    code of its own and a sanitize build here (None for the others); :meth:`close` stops
    them all.

    Args:
        timeout: seconds one case may take on a sanitize build.
    """

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self._made: dict[str, CrashWitness | None] = {}

    def __call__(self, name: str) -> CrashWitness | None:
        """The witness of target ``name``, or None. The others' workers stop first (one
        sanitizer runtime runs in a process at a time; a witness starts its worker again
        when next asked)."""
        for other, witness in self._made.items():
            if other != name and witness is not None:
                witness.close()
        if name not in self._made:
            from fuzzer.targets import get_target

            target = get_target(name)
            self._made[name] = None if target.reports_edges else \
                CrashWitness.for_target(target, self.timeout)
        return self._made[name]

    def close(self) -> None:
        """Stop every witness made."""
        for witness in self._made.values():
            if witness is not None:
                witness.close()
        self._made.clear()
