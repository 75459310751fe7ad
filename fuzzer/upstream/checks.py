"""Checks of bundles against builds of their target: each build's environment made once,
each (bundle, build) judged once, within one command.

Before repro.py runs, the environment is asked (:mod:`fuzzer.upstream.probe`) whether its
target has every pass the bundle's repro.py runs and whether optfuzz's adapter loads it there:
where not, the bundle is ``untestable`` against that build, as it is where its symptom needs
a sanitize build (repro.py would use the installed target's) or it has no repro.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fuzzer.store.folder import BundleStore
from fuzzer.store.meta import BundleMeta
from fuzzer.upstream.bisect import BAD, GOOD, SKIP, TOO_OLD, Probe
from fuzzer.upstream.environments import Environment, EnvironmentCache, InstallError
from fuzzer.upstream.records import record_upstream
from fuzzer.upstream.spec import Spec, release
from fuzzer.upstream.verdict import Verdict, run_repro, untestable


def bundle_passes(meta: BundleMeta) -> list[str]:
    """The passes the bundle's repro.py runs by name: the responsible ones where localized,
    else the configured list (none where it runs the target's default, whatever that is in
    a build)."""
    named = meta.responsible_passes
    return list(named if named is not None else meta.target.passes)


def target_package(meta: BundleMeta) -> str | None:
    """The canonical name of the distribution that installs the bundle's target, or None
    where the target names none (or is not registered here)."""
    from packaging.utils import canonicalize_name

    from fuzzer.targets import get_target

    try:
        package = get_target(meta.target.name).package
    except (KeyError, ImportError):
        return None
    return canonicalize_name(package) if package else None


class UpstreamChecks:
    """Verdicts of bundles against SPECs.

    Args:
        cache: where the environments are.
        timeout: seconds a repro.py's child may take (as a campaign's per-case timeout).
        memory_limit: the child's address-space limit in bytes, or None.
        notify: called with a short phrase before each slow step (an install, a repro.py
            run), for a progress display.
    """

    def __init__(self, cache: EnvironmentCache, timeout: float, memory_limit: int | None,
                 notify: Callable[[str], None] | None = None) -> None:
        self.cache = cache
        self.timeout = timeout
        self.memory_limit = memory_limit
        self.notify = notify or (lambda text: None)
        self._envs: dict[str, Environment | InstallError] = {}
        self._facts: dict[tuple[str, str], dict[str, Any]] = {}
        self._verdicts: dict[tuple[str, str], Verdict] = {}

    def environment(self, spec: Spec) -> Environment:
        """``spec``'s environment (installed on first use; a failure is remembered).

        Raises:
            InstallError: it cannot be installed.
        """
        if spec.text not in self._envs:
            if self.cache.cached(spec) is None:
                self.notify(f"installing {spec.text}")
            try:
                self._envs[spec.text] = self.cache.ensure(spec, self.notify)
            except InstallError as exc:
                self._envs[spec.text] = exc
        found = self._envs[spec.text]
        if isinstance(found, InstallError):
            raise found
        return found

    def facts(self, env: Environment, target: str, passes: list[str]) -> dict[str, Any]:
        """What :mod:`fuzzer.upstream.probe` says of ``target`` in ``env``, with
        ``missing`` covering ``passes`` (asked once per environment and pass).

        Raises:
            InstallError: the probe fails.
        """
        key = (env.spec, target)
        known = self._facts.get(key)
        new = [p for p in passes if known is None or p not in known["asked"]]
        if known is None or new:
            found = env.probe("target", target, env.project, *new)
            asked = set(new) | (known["asked"] if known else set())
            missing = set(found["missing"]) | (known["missing"] if known else set())
            known = {**found, "asked": asked, "missing": missing}
            self._facts[key] = known
        return known

    def check(self, bundle: Path, meta: BundleMeta, spec: Spec) -> Verdict:
        """The verdict of the bundle in folder ``bundle`` (meta ``meta``) against
        ``spec``.

        Raises:
            InstallError: ``spec`` cannot be installed.
        """
        bundle = bundle.resolve()  # the environment's processes run in its own folder
        key = (str(bundle), spec.text)
        if key not in self._verdicts:
            self._verdicts[key] = self._check(bundle, meta, spec)
        return self._verdicts[key]

    def _check(self, bundle: Path, meta: BundleMeta, spec: Spec) -> Verdict:
        from oracles import symptom

        env = self.environment(spec)
        passes = bundle_passes(meta)
        facts = self.facts(env, meta.target.name, passes)
        version = facts["version"]
        if not Path(facts["location"]).resolve().is_relative_to(env.folder.resolve()):
            raise InstallError(f"{spec.text}: the environment's {env.project} is not its "
                               f"own ({facts['location']})")
        if facts["error"]:
            return untestable(version, f"optfuzz cannot load {meta.target.name} "
                                       f"{version}: {facts['error']}",
                              unsupported=facts["lacks_module"])
        missing = [p for p in passes if p in facts["missing"]]
        if missing:
            return untestable(version, f"passes missing in {meta.target.name} {version}: "
                                       f"{', '.join(missing)}", unsupported=True)
        if symptom(meta.symptom).build == "sanitize":
            return untestable(version, "the symptom needs a sanitize build of the target")
        try:
            script = env.probe("repro", str(bundle), str(self.timeout),
                               str(self.memory_limit or "none"))
        except InstallError as exc:
            return untestable(version, f"cannot write its repro.py there: {exc}")
        self.notify(f"{meta.id} against {spec.text}")
        try:
            return run_repro(env, bundle, script, version, self.timeout)
        except OSError as exc:
            return untestable(version, f"repro.py cannot run: {exc.strerror or exc}")

    def probe_release(self, bundle: Path, meta: BundleMeta, package: str) -> Probe:
        """The probe :func:`fuzzer.upstream.bisect.bisect` calls for the bundle: a release
        is bad where the bundle ``fails`` there, good where it is ``fixed``, too old where
        it lacks what the test needs, skipped (with the reason) where it cannot be
        installed or gives another verdict."""

        def probe(version: str) -> tuple[str, str | None]:
            try:
                verdict = self.check(bundle, meta, release(package, version))
            except InstallError as exc:
                return SKIP, str(exc)
            outcome = {"fails": BAD, "fixed": GOOD}.get(verdict.status)
            if outcome is not None:
                return outcome, None
            return TOO_OLD if verdict.unsupported else SKIP, \
                f"{verdict.status}: {verdict.message or verdict.observed}"

        return probe

    def against(self, store: BundleStore, metas: list[BundleMeta],
                specs: list[Spec]) -> Iterator[Checked]:
        """Check every bundle of ``store`` (by its meta) against every SPEC of its target's
        package, SPEC by SPEC; record each verdict in the bundle's ``upstream`` and yield
        it. A SPEC that cannot be installed, or that no bundle's target is a build of,
        yields one :class:`Checked` with the problem."""
        for spec in specs:
            try:
                project = spec.project or self.environment(spec).project
            except InstallError as exc:
                yield Checked(spec, problem=str(exc))
                continue
            mine = [m for m in metas if target_package(m) == project]
            if not mine:
                yield Checked(spec, problem=f"{spec.text}: no bundle here is of {project}")
            for meta in mine:
                try:
                    verdict = self.check(store.path(meta.id), meta, spec)
                except InstallError as exc:
                    yield Checked(spec, problem=str(exc))
                    break
                record_upstream(store, meta.id, spec.text, verdict)
                yield Checked(spec, meta, verdict)


@dataclass(frozen=True)
class Checked:
    """One result of :meth:`UpstreamChecks.against`.

    Attributes:
        spec: the build checked against.
        meta: the bundle checked, or None for a problem of the SPEC as a whole.
        verdict: the bundle's verdict, or None.
        problem: why the SPEC checked nothing (one line), or None.
    """

    spec: Spec
    meta: BundleMeta | None = None
    verdict: Verdict | None = None
    problem: str | None = None
