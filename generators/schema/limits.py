"""Which reasons for an uncovered feature pair are limits of what the anchor ops can take,
and which are the generator's own shortfall.

``coverage --schema`` gives every feasible pair no draw exercised a reason
(:func:`generators.schema.measure.schema_coverage`). Some reasons say that no valid model
*of the motif's pattern* can hold the pair: the op's schema refuses the combination
(Loop's trip count cannot be absent while its condition is listed), onnxruntime, which
runs every original model, has no kernel for it or refuses it, or the rewrite's pattern
itself needs the level another way (the fusion reads the optional output that the pair
leaves unused). Others say that the generator did not manage it (no draw took the pair, a
draw was undone, no candidate value was found): those are gaps to close. Each limit is one
entry of :data:`LIMITS`, a pattern of the reason's text and the kind of limit.
"""

from __future__ import annotations

import re

#: kind of limit -> patterns (regular expressions matched at the start of a reason).
LIMITS: dict[str, tuple[str, ...]] = {
    # the ONNX schema of the op (its version at the model's opset) refuses the pair
    "schema": (
        r"\S+-\d+ does not (take|allow) ",
        r"a later input is listed",
        r"no tensor of the node is bound to ",
        r"inference fails: \[ShapeInferenceError\]",
        r"\S+ does not exist at opset ",
    ),
    # onnxruntime, which runs every original model, cannot run it
    "onnxruntime": (
        r"onnxruntime has no CPU kernel ",
        r"onnxruntime's \S+ (takes|requires) ",
    ),
    # the target refuses such a model before any rewrite runs, by design
    "target": (
        r"the target loads no sparse tensor",
    ),
    # the rewrite's pattern needs the level another way, or ties it to an op that refuses it
    "pattern": (
        r"the motif's pattern reads the output",
        r"the motif ties \S+ to \S+, and ",
        # a test must end: a Loop without a trip count runs until its body says stop
        r"a Loop without its trip count M runs until",
    ),
}

_COMPILED = {kind: re.compile("|".join(f"(?:{p})" for p in pats))
             for kind, pats in LIMITS.items()}


def limit_of(reason: str) -> str | None:
    """The kind of limit (a key of :data:`LIMITS`) ``reason`` states, or None where it is a
    shortfall of the generator (``"no draw took this pair"``, a draw undone, ...)."""
    return next((kind for kind, rx in _COMPILED.items() if rx.match(reason)), None)
