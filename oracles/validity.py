"""Validity oracle: onnx.checker (full_check) or strict shape inference rejects the optimized
model while accepting the original (the pipeline checks the original only on failure).

The finding's ``detail["error_class"]`` is the kind of rule the model breaks, without the
node, tensor, op type, shape or number that the message names: for shape and type inference
the exception and its last bracketed category (``InferenceError: ShapeInferenceError``); for
the checker's structural rules the exception and the rule's sentence (``ValidationError:
Nodes in a graph must be topologically sorted``). The same broken rewrite fails inference at
whichever node happens to follow it, so the root-cause key uses this class, with the
rewrite's footprint, in place of the message.
"""

from __future__ import annotations

import re

from oracles.base import Finding, Outcome, Symptom, register

_CATEGORY = re.compile(r"\[(\w+(?:Error|Exception))\]")
_RULE_END = re.compile(r",\s*however|:|\(op_type|\bfor\b|\bof node\b")
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
_NUMBER = re.compile(r"(?<![A-Za-z_])\d+")
#: checker rules whose message starts with the offending tensor's name, unquoted.
_NAME_FIRST = re.compile(r"^\S+ (?=in initializer but not in graph input|initializer name is "
                         r"not unique)")


def error_class(message: str) -> str:
    """The kind of rule ``message`` (``"<Exception>: <text>"``, as the stage driver's
    ``error_text`` writes it) says the model breaks (see the module docstring)."""
    kind, _, text = message.partition(": ")
    categories = _CATEGORY.findall(text)
    if categories:
        return f"{kind}: {categories[-1]}"
    named = _QUOTED.sub("<name>", _NAME_FIRST.sub("<name> ", text))  # before a ':' in a name
    rule = _NUMBER.sub("<n>", _RULE_END.split(named, maxsplit=1)[0])
    return f"{kind}: {' '.join(rule.split())[:100]}"


def invalid_model(outcome: Outcome) -> list[Finding]:
    """The optimized model is not a valid ONNX model."""
    if outcome.status == "error" and outcome.stage == "validate":
        message = outcome.error or "invalid model"
        return [Finding("invalid-model", "validate", message,
                        {"error_class": error_class(message)})]
    return []


register(Symptom(
    "invalid-model", 40, ("validate",), invalid_model, "produces an invalid model",
    "The optimized model passes `onnx.checker.check_model(full_check=True)` and strict shape "
    "inference, as the input model does.", footprint=True, key_detail="error_class",
    fault="rewrite",
    severity_class="invalid-model", corpus_column="crash_or_invalid", words="invalid model",
    check="checker", reproduced="`onnx.checker.check_model(full_check=True)` rejects the result"))
