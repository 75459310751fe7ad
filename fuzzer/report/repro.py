"""repro.py of a bundle: a standalone script (onnx, onnxruntime, numpy and the target's own
package) that loads model.onnx and inputs.npz, runs the target and exits 1 while the bug
reproduces, 0 once it is gone.

The script runs the test in a child process of itself, so a signal or a hang is observed
rather than suffered. Its comparisons are the oracles' own functions, copied in by
:func:`render_repro`, so the script and the campaign always agree.
"""

from __future__ import annotations

import inspect
from functools import lru_cache
from typing import Any

_BODY = r'''
STAGES = ("reference", "optimize", "validate", "load", "execute", "compare")
SIGNAL_SYMPTOM = {"optimize": "optimizer-abort", "validate": "optimizer-abort",
                  "load": "load-failure", "execute": "runtime-failure"}


def session(model_bytes):
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    options.intra_op_num_threads = 1
    return ort.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])


def run(sess, feeds):
    names = [o.name for o in sess.get_outputs()]
    wanted = {i.name: feeds[i.name] for i in sess.get_inputs()}
    return dict(zip(names, sess.run(names, wanted)))


def valid(model):
    try:
        onnx.checker.check_model(model, full_check=True)
        onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def stage(name):
    print(f"STAGE {name}", flush=True)


def observe():
    """Run the differential test; return (symptom or None, explanation)."""
    model = onnx.load("model.onnx")
    feeds = dict(np.load("inputs.npz", allow_pickle=False))
    model_bytes = model.SerializeToString()
    stage("reference")
    expected = run(session(model_bytes), feeds)
    stage("optimize")
    try:
        optimized = optimize(model)
    except Exception as exc:
        return "optimizer-error", f"{type(exc).__name__}: {exc}"
    optimized_bytes = optimized.SerializeToString()
    if optimized_bytes == model_bytes:
        return None, "the target returned the model unchanged"
    stage("validate")
    problem = valid(optimized)
    if problem and valid(model) is None:
        return "invalid-model", problem
    stage("load")
    try:
        sess = session(optimized_bytes)
    except Exception as exc:
        return "load-failure", f"{type(exc).__name__}: {exc}"
    stage("execute")
    try:
        actual = run(sess, feeds)
    except Exception as exc:
        return "runtime-failure", f"{type(exc).__name__}: {exc}"
    stage("compare")
    if len(expected) != len(actual):
        return "output-mismatch", f"output count {len(expected)} became {len(actual)}"
    for (name, e), a in zip(expected.items(), actual.values()):
        diff = compare_arrays(e, a)
        if diff is not None:
            return "output-mismatch", f"output '{name}': {diff.summary}"
    before, after = count_nodes(model.graph), count_nodes(optimized.graph)
    if after > before:
        return "bloat", f"node count grew from {before} to {after}"
    unused = unused_initializers(optimized.graph)
    if CHECK_UNUSED and unused:
        return "bloat", f"unused initializers left: {unused}"
    if (model.ir_version, [o.name for o in model.graph.output]) != (
            optimized.ir_version, [o.name for o in optimized.graph.output]):
        return "metadata-change", "IR version or graph outputs changed"
    return None, "outputs match"


def main():
    if "--child" in sys.argv:
        symptom, why = observe()
        print(f"RESULT {symptom or 'ok'}\t{why}", flush=True)
        return
    os.chdir(os.path.dirname(os.path.abspath(__file__)))
    try:
        proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--child"],
                              capture_output=True, text=True, timeout=TIMEOUT_S)
        lines = proc.stdout.splitlines()
        last_stage = ([l.split()[1] for l in lines if l.startswith("STAGE ")] or ["?"])[-1]
        results = [l for l in lines if l.startswith("RESULT ")]
        if results:
            observed, _, why = results[-1][len("RESULT "):].partition("\t")
        elif proc.returncode < 0:
            observed = SIGNAL_SYMPTOM.get(last_stage, "unusable")
            why = f"killed by signal {-proc.returncode} in stage {last_stage}"
        else:
            observed, why = "unusable", (proc.stderr.strip().splitlines() or ["?"])[-1]
    except subprocess.TimeoutExpired:
        observed, why = "hang", f"no result after {TIMEOUT_S} s"
    observed = None if observed == "ok" else observed
    print(f"expected symptom: {SYMPTOM}; observed: {observed or 'none'} ({why})")
    if observed == "unusable":
        sys.exit(2)  # the test could not run here: neither the bug nor its fix
    sys.exit(1 if observed == SYMPTOM else 0)


if __name__ == "__main__":
    main()
'''


@lru_cache(maxsize=1)
def _embedded_sources() -> str:
    """Source of the oracle functions repro.py carries (read once per process)."""
    from oracles import bloat, tolerance

    return "\n\n".join(inspect.getsource(obj) for obj in (
        tolerance.Difference, tolerance.compare_arrays, bloat.count_nodes, bloat._used_names,
        bloat.unused_initializers))


def render_repro(bundle_id: str, symptom: str, target_name: str, target_version: str,
                 snippet: str, timeout: float, check_unused: bool = True) -> str:
    """The text of repro.py for a bundle.

    Args:
        bundle_id: the bundle's id (for the docstring).
        symptom: the symptom the script checks for.
        snippet: Python lines turning ``model`` into ``optimized`` (``Target.repro_snippet``).
        timeout: seconds before the child counts as hung.
        check_unused: whether unused initializers left behind count as bloat (the rule of
            :mod:`oracles.bloat`: only where the configuration asked for their removal).
    """
    from oracles import tolerance

    embedded = _embedded_sources()
    tolerances = (f"TOLERANCES = {{np.dtype(k): v for k, v in "
                  f"{ {str(k): v for k, v in tolerance.TOLERANCES.items()} !r}.items()}}\n"
                  f"DEFAULT_TOLERANCE = {tolerance.DEFAULT_TOLERANCE!r}\n")
    body = "\n".join("    " + line if line else "" for line in snippet.rstrip().splitlines())
    return (
        "#!/usr/bin/env python3\n"
        f'"""optfuzz {bundle_id}: {symptom} in {target_name} {target_version}.\n\n'
        "Run in this folder: python repro.py\n"
        'Exit status 1 while the bug reproduces, 0 once it is fixed, 2 if it cannot run."""\n\n'
        "import os\nimport subprocess\nimport sys\n"
        "from dataclasses import dataclass\nfrom typing import Any\n\n"
        "try:\n    import numpy as np\n    import onnx\n    import onnxruntime as ort\n"
        "except ImportError as exc:  # cannot run here: neither the bug nor its fix\n"
        "    print(f\"cannot run the repro: {exc}\", file=sys.stderr)\n"
        "    sys.exit(2)\n\n"
        f"SYMPTOM = {symptom!r}\nTIMEOUT_S = {timeout:g}\nCHECK_UNUSED = {check_unused}\n"
        f"{tolerances}\n\n"
        f"def optimize(model):\n{body}\n    return optimized\n\n\n"
        f"{embedded}\n{_BODY}"
    )


def repro_context(meta: dict[str, Any]) -> dict[str, Any]:
    """Arguments of :func:`render_repro` taken from a bundle's meta.json dict."""
    from fuzzer.targets import get_target
    from oracles.bloat import cleanup_ran_last

    target = get_target(meta["target"]["name"])
    return {"check_unused": cleanup_ran_last(meta["target"]["config"].get("passes")),
            "bundle_id": meta["id"], "symptom": meta["symptom"],
            "target_name": target.name, "target_version": meta["target"]["version"],
            "snippet": target.repro_snippet(meta["target"]["config"])}
