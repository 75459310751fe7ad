"""The standalone repro of report.md: a short script a maintainer pastes into a file and runs,
with nothing of optfuzz and no attachment.

It parses the minimized model from its ONNX text (:mod:`fuzzer.report.model_source`),
writes the inputs inline (:mod:`fuzzer.report.feeds_source`), makes the target's own call
(:meth:`fuzzer.targets.base.Target.repro_snippet`, with the configuration of
:func:`fuzzer.report.repro.repro_context`) and checks the symptom the way its oracle does,
by the check its symptom's record names (:attr:`oracles.base.Symptom.check`, one of
:data:`CHECKS`): the call raises or
kills its process (in a child process), the call does not finish, onnx's checker rejects
the result, onnxruntime cannot load or run it, or onnxruntime's outputs of the input and
the optimized model differ beyond optfuzz's tolerance (printing the max and mean abs
difference). It exits 1 and prints ``reproduced: ...`` while the bug shows, 0 once it is
fixed (an error of its own, such as a missing package, ends it with a traceback).

Its code (the model's data aside) is at most :data:`MAX_LINES` lines where the target's
call takes a few lines (the fake target, onnxoptimizer); a target whose call takes more
(onnxsim lists every optimizer it skips) adds them. A symptom without a check here (bloat,
metadata-change, slow, metric-drift, memory-error) has no standalone repro: the bundle's
repro.py tests it.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from typing import Any

from fuzzer.registry import Registry
from fuzzer.report.environment import EXECUTION_PROVIDER
from fuzzer.report.feeds_source import declared, feeds_source
from fuzzer.report.model_source import model_source
from fuzzer.report.repro import repro_context
from oracles import load_oracles

#: most lines of the script's code, the model's data aside, where the target's call is
#: short.
MAX_LINES = 30
#: seconds the script waits for a call that hangs (``$SECONDS`` in its template).
HANG_SECONDS = 60
#: the line of a template that the target's call takes (indented like it).
CALL = "$CALL"
#: the line of a template that the onnxruntime runner takes.
SESSION = "$SESSION"
_IMPORT = re.compile(r"^(?:import|from)\s")

#: ``run(m)``: onnxruntime's outputs of model ``m`` on ``FEEDS``, its own graph
#: optimizations off (the reference run of the campaign); ``$FEED`` is how it picks the
#: inputs (:data:`FEED_BY`).
_RUNNER = f'''\
OPTIONS = ort.SessionOptions()  # the reference run: onnxruntime's own optimizations off
OPTIONS.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
def run(m):
    s = ort.InferenceSession(m.SerializeToString(), OPTIONS, providers=["{EXECUTION_PROVIDER}"])
    return s.run(None, $FEED)'''
#: whether the configuration renames or retypes the graph inputs on purpose
#: (``interface_may_change`` of :meth:`fuzzer.targets.base.Target.oracle_context`) -> how
#: ``run`` picks its inputs: by name, as the campaign does, or by position.
FEED_BY = {False: "{i.name: FEEDS[i.name] for i in s.get_inputs()}",
           True: "dict(zip([i.name for i in s.get_inputs()], FEEDS.values()))  # by position"}

#: a crash: the call raises, or a signal kills its process (a crash site with no message of
#: its own shows either, from one run to the next).
_CRASHES = '''\
if sys.argv[1:] == ["--child"]:  # the call alone, in a process it may kill
    $CALL
    sys.exit(0)
child = subprocess.run([sys.executable, __file__, "--child"], capture_output=True, text=True)
if child.returncode:  # the bug: the call raises, or a signal kills its process
    sys.stderr.write(child.stderr)
    last = (child.stderr.strip().splitlines() or [f"exit status {child.returncode}"])[-1]
    sys.exit(f"reproduced: {last if child.returncode > 0 else f'signal {-child.returncode}'}")
print("not reproduced: the call returns a model")'''

_HANGS = '''\
if sys.argv[1:] == ["--child"]:  # the call alone, in a process that can be stopped
    $CALL
    sys.exit(0)
try:
    subprocess.run([sys.executable, __file__, "--child"], timeout=$SECONDS)
except subprocess.TimeoutExpired:  # the bug: the call does not finish
    sys.exit("reproduced: the call did not finish within $SECONDS s")
print("not reproduced: the call finished")'''

_INVALID = '''\
onnx.checker.check_model(model, full_check=True)  # the input model passes
$CALL
try:  # full_check: with strict, type-checking shape inference
    onnx.checker.check_model(optimized, full_check=True)
except Exception as exc:  # the bug: onnx rejects the optimized model
    sys.exit(f"reproduced: {type(exc).__name__}: {exc}")
print("not reproduced: the optimized model passes onnx's checks")'''

_ORT_FAILS = '''\
$CALL
$SESSION
run(model)  # the input model loads and runs
try:
    run(optimized)
except Exception as exc:  # the bug: onnxruntime cannot load or run the optimized model
    sys.exit(f"reproduced: {type(exc).__name__}: {exc}")
print("not reproduced: onnxruntime loads and runs the optimized model")'''

_WRONG_OUTPUT = '''\
$CALL
$SESSION
expected, actual = run(model), run(optimized)
if [(e.dtype, e.shape) for e in expected] != [(a.dtype, a.shape) for a in actual]:
    sys.exit(f"reproduced: outputs {[f'{e.dtype}{list(e.shape)}' for e in expected]} became "
             f"{[f'{a.dtype}{list(a.shape)}' for a in actual]}")
for i, (e, a) in enumerate(zip(expected, actual)):
    e, a, (rtol, atol) = e.astype(np.float64), a.astype(np.float64), TOLERANCE[i]
    finite = np.isfinite(e) & np.isfinite(a)  # atol is scaled by the output's magnitude:
    gap, scale = np.abs(a - e)[finite], max(1.0, np.abs(e[finite]).max(initial=0.0))
    if not np.allclose(a, e, rtol=rtol, atol=atol * scale, equal_nan=True):  # the bug
        sys.exit(f"reproduced: output {i}: max abs difference {gap.max(initial=0.0):.4g}, "
                 f"mean {gap.sum() / max(gap.size, 1):.4g}")
print("not reproduced: the outputs agree")'''


@dataclass(frozen=True)
class Check:
    """How the standalone repro tells that a symptom shows.

    Attributes:
        template: the script's lines after the model (and ``FEEDS``): :data:`CALL` stands
            for the target's call (which defines ``optimized``), :data:`SESSION` for the
            onnxruntime runner ``run(m)``.
        imports: the modules it imports beyond onnx (``numpy`` and ``onnxruntime`` are
            written ``as np`` and ``as ort``).
        feeds: whether it runs the models (on ``FEEDS``).
        compares: whether it compares their outputs (with ``TOLERANCE``).
    """

    template: str
    imports: tuple[str, ...]
    feeds: bool
    compares: bool = False


_RUNS = ("sys", "numpy", "onnxruntime")
#: kind of check (:attr:`oracles.base.Symptom.check`) -> how a standalone repro makes it.
CHECKS: Registry[Check] = Registry("check", {
    "crash": Check(_CRASHES, ("subprocess", "sys"), False),
    "timeout": Check(_HANGS, ("subprocess", "sys"), False),
    "checker": Check(_INVALID, ("sys",), False),
    "onnxruntime": Check(_ORT_FAILS, _RUNS, True),
    "outputs": Check(_WRONG_OUTPUT, _RUNS, True, compares=True),
})
#: how a module is imported in the script.
_IMPORT_LINE = {"numpy": "import numpy as np", "onnxruntime": "import onnxruntime as ort"}


@dataclass(frozen=True)
class StandaloneRepro:
    """The standalone repro of a bundle.

    Attributes:
        text: the script (ends with a newline).
        code_lines: its lines but the model's data (the ONNX text or base64).
        notes: sentences the report puts before it (how the model and the inputs are
            carried), possibly empty.
        check: the check it makes.
        what: what its ``reproduced`` means, for the report's sentence (the symptom record's
            :attr:`~oracles.base.Symptom.reproduced`).
        packages: the packages it imports beyond Python's own (numpy, onnx, ...).
    """

    text: str
    code_lines: int
    notes: list[str]
    check: Check
    what: str
    packages: list[str]


def split_call(call: str) -> tuple[list[str], list[str]]:
    """The target's call (:meth:`fuzzer.targets.base.Target.repro_snippet`) as
    ``(its leading import lines, the rest)``."""
    lines = call.rstrip("\n").split("\n")
    at = next((i for i, line in enumerate(lines) if not _IMPORT.match(line)), len(lines))
    return lines[:at], lines[at:]


def fill(template: str, slots: dict[str, list[str]]) -> list[str]:
    """The lines of ``template`` with each line that is only a slot's name (``$CALL``)
    replaced by that slot's lines, indented like it."""
    out: list[str] = []
    for line in template.split("\n"):
        name = line.strip()
        if name in slots:
            indent = line[:len(line) - len(line.lstrip())]
            out.extend(indent + item if item.strip() else item for item in slots[name])
        else:
            out.append(line)
    return out


def tolerances(model: Any) -> list[tuple[float, float]]:
    """``(rtol, atol)`` of each graph output of ``model`` as the output oracle compares
    them (:mod:`oracles.tolerance`: the output's float type, loosened to the least precise
    float type the model computes in; exact for other types)."""
    from oracles.tolerance import DEFAULT_TOLERANCE, TOLERANCES, computed_in

    precision = computed_in(model)
    found = []
    for value in model.graph.output:
        shape_type = declared(value)
        dtype = shape_type[1] if shape_type else precision
        if dtype is None or dtype.kind not in "fO":  # O: bfloat16 (computed_in)
            found.append((0.0, 0.0))
            continue
        rtol, atol = TOLERANCES.get(dtype, DEFAULT_TOLERANCE)
        if precision is not None:
            looser = TOLERANCES.get(precision, DEFAULT_TOLERANCE)
            rtol, atol = max(rtol, looser[0]), max(atol, looser[1])
        found.append((rtol, atol))
    return found


def _imports(modules: tuple[str, ...], call_imports: list[str]) -> list[str]:
    """The script's import lines: the check's standard modules, then numpy, onnx and
    onnxruntime, then the call's own (each once)."""
    standard = sorted(m for m in modules if m not in _IMPORT_LINE)
    third = [m for m in ("numpy", "onnx", "onnxruntime") if m in (*modules, "onnx")]
    lines = [f"import {m}" for m in standard] + [_IMPORT_LINE.get(m, f"import {m}")
                                                 for m in third]
    return lines + [line for line in dict.fromkeys(call_imports) if line not in lines]


def packages(import_lines: list[str]) -> list[str]:
    """The top-level packages ``import_lines`` import that are not Python's own, in
    order."""
    names = [line.split()[1].split(".")[0] for line in import_lines]
    return [name for name in dict.fromkeys(names) if name not in sys.stdlib_module_names]


def standalone_repro(meta: Any, model: Any, feeds: dict[str, Any] | None) -> \
        StandaloneRepro | None:
    """The standalone repro of the bundle of ``meta`` (a
    :class:`fuzzer.store.meta.BundleMeta`) for its minimized ``model`` (a ModelProto) and
    its inputs ``feeds`` (None: not at hand; they are drawn at random then), or None where
    its symptom has no check (:attr:`oracles.base.Symptom.check`) or is not registered.

    Raises:
        KeyError: the bundle's target is not registered.
        ImportError: the target cannot be imported here.
    """
    from fuzzer.targets import get_target

    record = load_oracles().get(meta.symptom, None)
    check = CHECKS.get(record.check, None) if record is not None else None
    if record is None or check is None:
        return None
    context = repro_context(meta)
    adapter = get_target(context["target"])
    call_imports, call = split_call(adapter.repro_snippet(context["config"]))
    source = model_source(model)
    data = list(source.lines)
    notes = [source.note] if source.note else []
    if check.feeds:
        inputs = feeds_source(model, feeds)
        data += inputs.lines
        notes += [inputs.note] if inputs.note else []
    if check.compares:
        data.append(f"TOLERANCE = {tolerances(model)!r}  # (rtol, atol) of each output, as "
                    "optfuzz compares them")
    renames = bool(adapter.oracle_context(context["config"]).get("interface_may_change"))
    runner = _RUNNER.replace("$FEED", FEED_BY[renames]).split("\n")
    template = check.template.replace("$SECONDS", str(HANG_SECONDS))
    body = fill(template, {CALL: call, SESSION: runner})
    imports = _imports((*check.imports, *source.imports), call_imports)
    lines = [*imports, "", *data, *body]
    return StandaloneRepro("\n".join(lines) + "\n", len(lines) - source.data_lines, notes,
                           check, record.reproduced, packages(imports))
