"""The short standalone repro inlined in report.md (and shipped as repro.py in the
attachment): onnx, onnxruntime, numpy and the target's own package only. Run next to
model.onnx and inputs.npz; it exits 1 while the bug reproduces, 0 once it is gone, 2 when it
cannot run at all (a missing package, a missing file); for ``optimizer-abort`` the process dies
by the signal instead.

Each symptom has a check template in :data:`CHECKS`; ``{snippet}`` is the target's
``repro_snippet`` (turns ``model`` into ``optimized``), ``{indented}`` the same indented
once.
"""

from __future__ import annotations

from typing import Any

_HEAD = '''\
"""{title}
Run next to model.onnx and inputs.npz; exits 1 while the bug reproduces, 2 if it cannot run."""
import os
import sys
import traceback


def _cannot_run(*exc):  # an error outside the checks below is not the bug
    traceback.print_exception(*exc)
    sys.stderr.flush()
    os._exit(2)


sys.excepthook = _cannot_run

import numpy as np
import onnx
import onnxruntime as ort

model = onnx.load("model.onnx")
feeds = dict(np.load("inputs.npz"))


def session(m):
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    return ort.InferenceSession(m.SerializeToString(), options,
                                providers=["CPUExecutionProvider"])


def run(m):
    sess = session(m)
    return sess.run(None, {{i.name: feeds[i.name] for i in sess.get_inputs()}})


expected = run(model)
'''

_TAIL = 'print("not reproduced")\n'

_COMPARE = '''\
{snippet}actual = run(optimized)
if len(actual) != len(expected):
    sys.exit(f"BUG: {{len(expected)}} outputs became {{len(actual)}}")
TOL = {tolerances!r}  # (rtol, atol); others exact
for i, (e, a) in enumerate(zip(expected, actual)):
    if (e.dtype, e.shape) != (a.dtype, a.shape):
        sys.exit(f"BUG: output {{i}}: {{e.dtype}}{{e.shape}} became {{a.dtype}}{{a.shape}}")
    if e.dtype.name in TOL:
        rtol, atol = TOL[e.dtype.name]
        scale = max(1.0, float(np.abs(e[np.isfinite(e)]).max(initial=0.0)))
        same = np.allclose(a, e, rtol=rtol, atol=atol * scale, equal_nan=True)
    else:
        same = np.array_equal(a, e)
    if not same:
        sys.exit(f"BUG: output {{i}} differs\\nexpected {{e.ravel()[:6]}}\\n"
                 f"actual   {{a.ravel()[:6]}}")
'''

CHECKS: dict[str, str] = {
    "optimizer-error": '''\
try:
{indented}except Exception as exc:
    sys.exit(f"BUG: optimize raised {{type(exc).__name__}}: {{exc}}")
''',
    "optimizer-abort": '''\
# while the bug is there, the next lines kill this process with a signal
{snippet}''',
    "hang": '''\
import faulthandler

faulthandler.dump_traceback_later({timeout:g}, exit=True)  # exit 1 if still running then
{snippet}faulthandler.cancel_dump_traceback_later()
''',
    "invalid-model": '''\
{snippet}try:
    onnx.checker.check_model(optimized, full_check=True)
    onnx.shape_inference.infer_shapes(optimized, check_type=True, strict_mode=True)
except Exception as exc:
    sys.exit(f"BUG: invalid optimized model: {{exc}}")
''',
    "load-failure": '''\
{snippet}try:
    session(optimized)
except Exception as exc:
    sys.exit(f"BUG: onnxruntime cannot load the optimized model: {{exc}}")
''',
    "runtime-failure": '''\
{snippet}try:
    run(optimized)
except Exception as exc:
    sys.exit(f"BUG: the optimized model fails to run: {{exc}}")
''',
    "output-mismatch": _COMPARE,
    "metric-drift": _COMPARE,
    "bloat": '''\
{snippet}

def unused(g):
    used = {{name for n in g.node for name in n.input}} | {{o.name for o in g.output}}
    return {{i.name for i in g.initializer}} - used


if len(optimized.graph.node) > len(model.graph.node):
    sys.exit(f"BUG: {{len(model.graph.node)}} nodes became {{len(optimized.graph.node)}}")
if unused(optimized.graph) - unused(model.graph):
    sys.exit(f"BUG: unused initializers left: {{unused(optimized.graph)}}")
''',
    "metadata-change": '''\
{snippet}

def interface(m):
    return (m.ir_version, sorted((o.domain, o.version) for o in m.opset_import),
            [i.name for i in m.graph.input], [o.name for o in m.graph.output])


if interface(optimized) != interface(model):
    sys.exit(f"BUG: {{interface(model)}} became {{interface(optimized)}}")
''',
}


def render_short_repro(meta: dict[str, Any], timeout: float = 30.0) -> str:
    """The short repro script for a bundle (meta.json schema 1 dict).

    Raises:
        KeyError: the bundle's target is not registered.
    """
    from fuzzer.targets import get_target
    from oracles.tolerance import TOLERANCES

    target = meta["target"]
    snippet = get_target(target["name"]).repro_snippet(target["config"])
    if not snippet.endswith("\n"):
        snippet += "\n"
    indented = "".join("    " + line if line.strip() else line
                       for line in snippet.splitlines(keepends=True))
    title = (f"optfuzz {meta['id']}: {meta['symptom']} in {target['name']} "
             f"{target['version']}.")
    check = CHECKS.get(meta["symptom"], _COMPARE).format(
        snippet=snippet, indented=indented, timeout=timeout,
        tolerances={str(k): v for k, v in TOLERANCES.items()})
    return _HEAD.format(title=title) + check + _TAIL
