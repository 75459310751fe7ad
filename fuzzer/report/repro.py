"""repro.py of a bundle, the one repro renderer of optfuzz.

The script needs onnx, onnxruntime, numpy and the target's own package, nothing of optfuzz.
It loads model.onnx and inputs.npz, runs the differential test as the campaign's workers do
(reference run, optimize, validate, load, execute, compare; the reference run first, as a
worker runs a case with ``TestCase.reference_first``) in a child process of itself,
with its address space limited like a campaign worker's (RLIMIT_AS), so a signal or a hang is
observed rather than suffered. It exits 1 while the bundle's symptom shows, 0 once it is gone,
2 when the test cannot run here (a missing package or file, an original that does not run).
A symptom that depends on timing or load (``Symptom.confirm``: ``slow``, ``hang``) is judged
by the majority of three runs (:func:`oracles.base.by_majority`), as the campaign judged it.

Its verdict is the campaign's by construction: the script carries verbatim the source of the
oracle modules that detect the bundle's symptom (and of the oracle modules they import) and
the stage driver that campaign workers run (:mod:`fuzzer.execution.stage_driver`), and judges
every stage with the same registered :class:`oracles.base.Symptom` records. Only the process
harness around the driver (:data:`_HARNESS`: a child process that runs the test, a parent
that observes its signals and hangs) is the script's own.
"""

from __future__ import annotations

import importlib
import inspect
import re
from functools import lru_cache
from typing import Any

#: exit codes of repro.py.
REPRODUCES, FIXED, CANNOT_RUN = 1, 0, 2

#: repro.py's own part: the process harness around the stage driver, which the script
#: carries verbatim (:mod:`fuzzer.execution.stage_driver`). The child runs the test and
#: prints each stage it enters and its findings; the parent runs the child under the
#: bundle's timeout (and sanitizer runtime) and judges a signal, a hang or a sanitizer report
#: at the stage the child was in, as the campaign's sandbox does.
_HARNESS = r'''
STAGE_MARK, RESULT_MARK = "OPTFUZZ-STAGE ", "OPTFUZZ-RESULT "
#: the bundle's symptom shows after onnx's checks: the test goes on past an invalid model,
#: as the campaign went past one its target documents.
LATER_SYMPTOM = not set(REGISTRY[SYMPTOM].stages) & {"optimize", "validate"}


def stage(name):
    print(STAGE_MARK + name, flush=True)


def observe():
    """The child's test: model.onnx and inputs.npz through the campaign's stage driver,
    the original's reference run first; return the findings."""
    driver = StageDriver(judge, Outcome, STAGES, stage)
    driver.load_original(onnx.load("model.onnx"),
                         unpack_values(dict(np.load("inputs.npz", allow_pickle=False))),
                         task=TASK, extra=EXTRA)
    driver.run_reference()
    failed = driver.checked_optimize(optimize)
    if failed is not None:
        return judge(failed)
    return driver.verify(lambda found: LATER_SYMPTOM)[1]


def judge(outcome):
    outcome.task, outcome.extra = TASK, {**EXTRA, **outcome.extra}
    found = [f for s in REGISTRY.values() for f in s.detect(outcome)]
    return sorted(found, key=lambda f: REGISTRY[f.symptom].severity)


def child():
    if MEMORY_LIMIT:
        try:
            resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
        except (ValueError, OSError):
            pass
    try:
        findings = observe()
    except Exception as exc:  # the original does not run here: no verdict
        print(f"cannot run the test: {error_text(exc)}", file=sys.stderr)
        sys.exit(CANNOT_RUN)
    print(RESULT_MARK + json.dumps([f.to_json() for f in findings]), flush=True)


def sanitized_env(folder):
    """The child's environment under the sanitizer runtime (reports to ``folder``), or None
    where SANITIZER is None. OPTFUZZ_SANITIZE_SITE names the folder that holds the
    target's sanitize build (default: where optfuzz found the bug)."""
    if not SANITIZER:
        return None
    env, libs = dict(os.environ), []
    for name in SANITIZER["preload"]:
        try:
            path = subprocess.run(["gcc", f"-print-file-name={name}"], capture_output=True,
                                  text=True, timeout=60).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            path = ""
        if not os.path.isabs(path):
            print(f"cannot run the test: {name} (GCC's sanitizer runtime) not found")
            sys.exit(CANNOT_RUN)
        libs.append(path)
    env["LD_PRELOAD"] = " ".join(libs)
    for key, value in SANITIZER["env"].items():
        env[key] = value.replace("{log}", os.path.join(folder, "report"))
    site = os.environ.get("OPTFUZZ_SANITIZE_SITE", SANITIZER["site"])
    if site:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (site, env.get("PYTHONPATH")) if p)
    return env


def sanitizer_report(folder):
    """The reports the sanitizers wrote into ``folder``, or None."""
    texts = []
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name), errors="replace") as f:
            texts.append(f.read())
    return "".join(texts).strip() or None


def parent():
    """Run the test in a child and exit with its verdict; for a symptom that depends on
    timing or load (``confirm``) the verdict is the majority of VOTES runs, as the
    campaign's own checks decide it."""
    shows = trial()
    if REGISTRY[SYMPTOM].confirm:
        shows = by_majority(shows, trial)
        print(f"verdict, majority of up to {VOTES} runs: "
              + ("reproduced" if shows else "not reproduced"))
    sys.exit(REPRODUCES if shows else FIXED)


def trial():
    """One run of the test in a child process: whether the bundle's symptom shows (exits
    with CANNOT_RUN where the test cannot run here)."""
    import tempfile

    here = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory(prefix="repro-sanitizer-") as folder:
        try:
            proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--child"],
                                  cwd=here, capture_output=True, text=True,
                                  timeout=TIMEOUT_S, env=sanitized_env(folder))
            out, code = proc.stdout, proc.returncode
        except subprocess.TimeoutExpired as exc:
            out, code = exc.stdout or "", None
            if isinstance(out, bytes):
                out = out.decode(errors="replace")
        report = report_in(sanitizer_report(folder)) if SANITIZER else None
    if SANITIZER and report is None and code is not None:
        report = report_in(proc.stderr)  # GCC's UBSan reports to the error output
    lines = out.splitlines()
    last = ([ln[len(STAGE_MARK):] for ln in lines if ln.startswith(STAGE_MARK)] or ["load"])[-1]
    results = [ln[len(RESULT_MARK):] for ln in lines if ln.startswith(RESULT_MARK)]
    before_target = STAGES.index(last) < STAGES.index("optimize")  # the original's stages
    if report is not None and not before_target:
        findings = judge(Outcome("sanitizer", last, extra={"sanitizer_report": report}))
    elif results:
        findings = [Finding.from_json(f) for f in json.loads(results[-1])]
    elif code is None or code < 0:
        died = Outcome("timeout", last, timeout=TIMEOUT_S) if code is None else \
            Outcome("signal", last, signal=-code, error=f"exit code {code}")
        if before_target:
            print(f"cannot run the test: the original model {died.status} in its {last} stage")
            sys.exit(CANNOT_RUN)
        findings = judge(died)
    else:
        print(proc.stderr.strip() or f"cannot run the test (exit code {code})")
        sys.exit(CANNOT_RUN)
    seen = "; ".join(f"{f.symptom}: {f.message}" for f in findings) or "none"
    print(f"expected symptom: {SYMPTOM}; observed: {seen}")
    shows = any(f.symptom == SYMPTOM for f in findings)
    print("reproduced" if shows else "not reproduced")
    return shows

'''

_MAIN = '''
if __name__ == "__main__":
    child() if "--child" in sys.argv else parent()
'''

_HEAD = '''#!/usr/bin/env python3
"""optfuzz {bundle_id}: {symptom} in {target} {version}.

Run in this folder: python repro.py
Exit status 1 while the bug reproduces, 0 once it is fixed, 2 if the test cannot run here.
A symptom that depends on timing is judged by the majority of up to 3 runs.
The test runs in a child process (address space limited to MEMORY_LIMIT bytes), so a crash or
a hang is observed, not suffered. The oracle code and the stage driver below `optimize` are
optfuzz's own, copied verbatim, so this script tests and judges as the campaign does.
Where SANITIZER is set, the child runs under GCC's AddressSanitizer runtime and imports the
target's sanitize build from $OPTFUZZ_SANITIZE_SITE (default: SANITIZER["site"]).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys

try:
    import numpy as np
    import onnx
    import onnxruntime as ort
except ImportError as exc:  # cannot run here: neither the bug nor its fix
    print(f"cannot run the repro: {{exc}}", file=sys.stderr)
    sys.exit(2)

SYMPTOM = {symptom!r}
TIMEOUT_S = {timeout!r}
MEMORY_LIMIT = {memory_limit!r}
SANITIZER = {sanitizer!r}
TASK = {task!r}
EXTRA = {extra!r}
REPRODUCES, FIXED, CANNOT_RUN = {codes!r}


def optimize(model):
{snippet}    return optimized
'''

#: the import of an embedded module: an oracle module, or the registry mechanism.
_ORACLE_IMPORT = re.compile(r"^from (?:oracles(?:\.\w+)*|fuzzer\.registry) import "
                            r"(?:\([^)]*\)|[^\n]*)\n", re.M)
_FUTURE = "from __future__ import annotations\n"


def _dependencies(module_name: str) -> list[str]:
    """``module_name`` and the oracle modules it imports (and :mod:`fuzzer.registry`, which
    the symptom registry is), dependencies first."""
    order: list[str] = []

    def visit(name: str) -> None:
        if name in order:
            return
        source = inspect.getsource(importlib.import_module(name))
        for match in re.finditer(r"^from (oracles\.\w+|fuzzer\.registry) import", source,
                                 re.M):
            visit(match.group(1))
        order.append(name)

    visit("oracles.base")
    visit(module_name)
    return order


@lru_cache(maxsize=1)
def driver_source() -> str:
    """The text of :mod:`fuzzer.execution.stage_driver`, the campaign's stage driver, which
    repro.py carries as it is."""
    from fuzzer.execution import stage_driver

    return inspect.getsource(stage_driver)


@lru_cache(maxsize=32)
def embedded_oracles(symptom_name: str) -> str:
    """The source repro.py carries for ``symptom_name``: the oracle module that registers it
    and every oracle module it imports, dependencies first (the registry mechanism
    :mod:`fuzzer.registry` among them), their ``from oracles...``, ``from fuzzer.registry``
    and ``__future__`` imports removed (the names are defined in the same file).

    Raises:
        KeyError: an unknown symptom.
    """
    from oracles import symptom

    record = symptom(symptom_name)
    parts = []
    for name in _dependencies(record.detect.__module__):
        source = inspect.getsource(importlib.import_module(name))
        source = _ORACLE_IMPORT.sub("", source.replace(_FUTURE, ""))
        what = "registry mechanism" if name == "fuzzer.registry" else "oracle"
        parts.append(f"# ---- {name} (optfuzz's {what}, verbatim) ----\n{source.strip()}\n")
    return "\n\n".join(parts)


def render_repro(bundle_id: str, symptom: str, target: str, config: dict[str, Any],
                 version: str, timeout: float, memory_limit: int | None = 4 << 30,
                 task: str | None = None) -> str:
    """The text of repro.py for a bundle.

    Args:
        bundle_id: the bundle's id (for the docstring).
        symptom: the symptom the script checks for.
        target: the registered target name; its ``repro_snippet`` and ``oracle_context``
            for ``config`` are written into the script.
        config: the target configuration the script runs.
        version: the target version the bundle was found with.
        timeout: seconds before the child counts as hung.
        memory_limit: the child's address-space limit in bytes (RLIMIT_AS), or None.
        task: the model's task category, for the task-level oracle.

    Raises:
        KeyError: an unknown target or symptom.
    """
    from fuzzer.execution.pipeline import oracle_extra
    from fuzzer.targets import get_target
    from oracles import symptom as symptom_record

    adapter = get_target(target)
    sanitizer = _sanitizer(symptom, adapter)
    snippet = _indented(adapter.repro_snippet(config))
    head = _HEAD.format(bundle_id=bundle_id, symptom=symptom, target=target, version=version,
                        timeout=float(timeout), task=task, sanitizer=sanitizer,
                        memory_limit=None if sanitizer else memory_limit,
                        extra=oracle_extra(adapter, config),
                        codes=(REPRODUCES, FIXED, CANNOT_RUN), snippet=snippet + "\n")
    observer = symptom_record(symptom).observer
    if observer:
        observer = f"\n# ---- the test of {symptom}, in place of observe above ----{observer}"
    if "optimize_without_passes" in observer:
        observer = _without_passes(adapter, config) + observer
    return (f"{head}\n\n{embedded_oracles(symptom)}\n\n# ---- optfuzz's stage driver "
            f"(fuzzer/execution/stage_driver.py), verbatim ----\n{driver_source()}\n"
            f"# ---- repro.py's process harness ----\n{_HARNESS.lstrip()}{observer}{_MAIN}")


def _indented(snippet: str) -> str:
    """``snippet``'s lines indented as a function body, without its final newline."""
    return "".join("    " + line if line.strip() else line
                   for line in snippet.rstrip("\n").splitlines(keepends=True))


def _without_passes(adapter: Any, config: dict[str, Any]) -> str:
    """repro.py's ``optimize_without_passes(model)``: ``config`` run with an empty pass list
    (the target's own load and save, the baseline a ``slow`` test subtracts), or None where
    ``config`` runs no pass (its optimize already is that baseline)."""
    if not adapter.passes_of(config):
        return "\n# the configuration runs no pass: optimize is the no-pass baseline\n" \
               "optimize_without_passes = None\n"
    body = _indented(adapter.repro_snippet(adapter.with_passes(config, [])))
    return ("\n\ndef optimize_without_passes(model):\n    \"\"\"The same call with no pass: the "
            "target's own load and save.\"\"\"\n" + body + "\n    return optimized\n")


def _sanitizer(symptom_name: str, adapter: Any) -> dict[str, Any] | None:
    """What repro.py needs to run its child under the sanitizer runtime, for a symptom only
    a sanitizer shows (``memory-error``): the libraries to preload, the sanitizers' options
    (``{log}``: the report path prefix) and the site folder of the target's sanitize build
    in this user's cache ("" where there is none: a pure-Python target, or no build).
    None for a symptom the installed target shows (``Symptom.build``)."""
    from oracles import symptom

    if symptom(symptom_name).build != "sanitize":
        return None
    from fuzzer.builds import sanitizer_build
    from fuzzer.builds.kinds import KINDS
    from fuzzer.errors import InputError

    try:
        build = sanitizer_build(adapter)
    except InputError:
        build = None
    kind = KINDS["sanitize"]
    return {"preload": list(kind.preload), "env": dict(kind.env),
            "site": build.site if build is not None else ""}


def _field(meta: Any, key: str) -> Any:
    return meta[key] if isinstance(meta, dict) else getattr(meta, key)


def repro_context(meta: Any) -> dict[str, Any]:
    """Arguments of :func:`render_repro` (all but ``timeout`` and ``memory_limit``) from a
    bundle's metadata (a :class:`fuzzer.store.meta.BundleMeta` or its JSON dict).

    ``config`` is the configuration that shows the bug with the fewest passes: where the
    bundle is localized (``responsible_passes`` is a list), the recorded configuration
    running only the responsible passes (the target's ``with_passes``), without
    ``fixed_point`` where localization found it not needed; else the recorded configuration.

    Raises:
        KeyError: a localized bundle names a target that is not registered.
    """
    def optional(key: str) -> Any:
        return meta.get(key) if isinstance(meta, dict) else getattr(meta, key, None)

    target = _field(meta, "target")
    source = _field(meta, "source") or {}
    config = dict(_field(target, "config"))
    responsible = optional("responsible_passes")
    if responsible is not None:
        from fuzzer.targets import get_target

        adapter = get_target(_field(target, "name"))
        config = adapter.with_passes(config, responsible)
        if (optional("localization") or {}).get("fixed_point_needed") is False:
            config = adapter.relaxations(config).get("fixed_point", config)
    return {"bundle_id": _field(meta, "id"), "symptom": _field(meta, "symptom"),
            "target": _field(target, "name"), "config": config,
            "version": _field(target, "version"), "task": source.get("task")}


def trigger_snippet(meta: Any) -> str:
    """The few lines of Python that show the target call repro.py makes on model.onnx, with
    the configuration of :func:`repro_context` (for the report; repro.py itself decides
    whether the bug shows).

    Raises:
        KeyError: the bundle's target is not registered.
    """
    from fuzzer.targets import get_target

    context = repro_context(meta)
    snippet = get_target(context["target"]).repro_snippet(context["config"])
    return 'import onnx\n\nmodel = onnx.load("model.onnx")\n' + snippet.rstrip("\n") + "\n"
