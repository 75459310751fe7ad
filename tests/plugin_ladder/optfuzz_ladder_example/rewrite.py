"""The ``ladder`` rewrite: plain Python over the ModelProto, with a planted deep branch.

It measures the longest run of consecutive Neg nodes (each reading the one before) and
climbs a ladder of nested ``if`` statements, one rung per run length from 1 to
:data:`DEPTH`; only a run of :data:`DEPTH` reaches the ``raise`` at the top. Each rung is
arcs of its own to coverage.py (the ``python`` kind of code coverage), so a run one Neg
longer than any seen before is a new edge feature: the seed that brought it joins a guided
campaign's pool, and mutating it (a Neg of the run repeated in place) climbs one rung
more. A generated graph holds a run of one or two (:mod:`optfuzz_ladder_example.motifs`),
seldom three or four, never six in the thousands tried, so chance alone does not get there.
This is the Python twin of the ``fake`` target's ``ladder`` pass
(``fuzzer/targets/fake.py``), which names its rungs itself (``fuzzer/targets/hits.py``)
instead of leaving them to coverage.py.
"""

from __future__ import annotations

from typing import Any

import onnx

#: the run of consecutive Neg nodes at which the rewrite raises.
DEPTH = 6
#: how the planted raise's message begins (the crash site of its root cause).
SITE = "optfuzz_ladder_example/rewrite.py:ladder"


def longest_neg_run(graph: Any) -> int:
    """The most Neg nodes in one chain of ``graph`` (an ``onnx.GraphProto``) where each
    reads the output of the one before."""
    run: dict[str, int] = {}  # tensor -> Neg nodes in the run that ends in it
    longest = 0
    for node in graph.node:
        if node.op_type == "Neg" and node.input and node.output:
            run[node.output[0]] = run.get(node.input[0], 0) + 1
            longest = max(longest, run[node.output[0]])
    return longest


def ladder(model: Any) -> Any:
    """A copy of ``model`` (an ``onnx.ModelProto``), unchanged, after climbing one rung
    per Neg of its longest run.

    Raises:
        RuntimeError: the run holds :data:`DEPTH` Neg nodes or more (the planted bug).
    """
    out = onnx.ModelProto()
    out.CopyFrom(model)
    longest = longest_neg_run(out.graph)
    if longest >= 1:
        if longest >= 2:
            if longest >= 3:
                if longest >= 4:
                    if longest >= 5:
                        if longest >= DEPTH:
                            raise RuntimeError(f"{SITE}: a run of {longest} Neg nodes")
    return out
