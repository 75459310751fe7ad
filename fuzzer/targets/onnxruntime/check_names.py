"""Which graph transformers the installed onnxruntime registers, level by level.

onnxruntime ignores a name in ``disabled_optimizers`` that it does not know: no error, no
warning (seen with 1.32). So the names cannot be checked by trying them; instead a session
built at ``ORT_ENABLE_ALL`` with verbose logging lists every transformer it applies, under
the level it belongs to (``Applying 16 graph transformer(s) for level 1 ...`` then
``Applying graph transformer ConstantFolding on step 1.``). That list is the installed
build's own truth: transformer names change between releases (``GeluFusion`` became
``GeluFusionL1`` and ``GeluFusionL2``). Rewrite rules run inside one transformer per level
(``Level1_RuleBasedTransformer``) and are not logged one by one; their names come from the
sources (``transformers.json``) and are kept where their level's rule-based transformer is
registered.

onnxruntime writes its log to the process's own stderr, so the probe runs in a child
process (one, about half a second, once per process that asks).
"""

from __future__ import annotations

import re
import subprocess
import sys
from functools import lru_cache

#: onnxruntime's transformer level number -> optfuzz's level name.
LEVEL_NAMES = {1: "basic", 2: "extended", 3: "layout", 4: "all"}
#: name prefix of the transformer that runs a level's rewrite rules.
RULE_RUNNER = re.compile(r"Level\d+_RuleBasedTransformer")

_PROBE = r"""
import onnxruntime as ort
from onnx import helper
nodes = [helper.make_node("Identity", ["x"], ["t"]), helper.make_node("Relu", ["t"], ["y"])]
graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", 1, [2, 3])],
                          [helper.make_tensor_value_info("y", 1, [2, 3])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
options = ort.SessionOptions()
options.log_severity_level = 0
options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
"""
_LEVEL = re.compile(r"Applying \d+ graph transformer\(s\) for level (\d+)")
_APPLY = re.compile(r"Applying graph transformer (\S+) on step")


def parse_log(text: str) -> dict[str, list[str]]:
    """``{level name: [transformer names in the order they ran]}`` from onnxruntime's
    verbose log ``text``; levels without a name in :data:`LEVEL_NAMES` are dropped."""
    levels: dict[str, list[str]] = {}
    current: str | None = None
    for line in text.splitlines():
        level = _LEVEL.search(line)
        if level is not None:
            current = LEVEL_NAMES.get(int(level.group(1)))
            if current is not None:
                levels.setdefault(current, [])
            continue
        applied = _APPLY.search(line)
        if applied is not None and current is not None and \
                applied.group(1) not in levels[current]:
            levels[current].append(applied.group(1))
    return levels


@lru_cache(maxsize=1)
def registered_transformers() -> dict[str, list[str]]:
    """The transformers the installed onnxruntime registers on the CPU EP, per level
    (:func:`parse_log` of a verbose session start in a child process).

    Raises:
        RuntimeError: the child failed or logged no transformer (the message says why).
    """
    try:
        done = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                              timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RuntimeError(f"cannot list onnxruntime's transformers: {exc}") from None
    levels = parse_log(done.stdout + done.stderr)
    if done.returncode != 0 or not any(levels.values()):
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"cannot list onnxruntime's transformers: {tail}")
    return levels


def accepted_names(names: list[str], rules: dict[str, list[str]] | None = None
                   ) -> tuple[list[str], list[str]]:
    """Split ``names`` into those the installed onnxruntime runs (a registered transformer,
    or a rule of ``rules`` ({level: [rule names]}) whose level has a rule-based
    transformer) and the rest.

    Raises:
        RuntimeError: see :func:`registered_transformers`.
    """
    levels = registered_transformers()
    known = {n for names_ in levels.values() for n in names_}
    for level, level_rules in (rules or {}).items():
        if any(RULE_RUNNER.fullmatch(n) for n in levels.get(level, ())):
            known.update(level_rules)
    return [n for n in names if n in known], [n for n in names if n not in known]
