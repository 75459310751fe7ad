"""The reducer's spec gate: a candidate that reproduces must also be a valid model by the ONNX
specification's own reference implementation (:class:`onnx.reference.ReferenceEvaluator`).

onnx.checker and onnxruntime accept models the specification forbids: onnxruntime's kernels
are lenient where the spec is not (a ``Compress`` condition longer than its axis, a 1-D
``axis`` input of ``CumSum`` where the spec asks for a 0-D one). A reduction step, shrinking
the dims of an input most of all, can turn a valid model into such a model, and a repro
built on it would still "fail" after the optimizer's real fix. The gate runs the candidate in
the reference evaluator and compares the shape of each graph output with onnxruntime's
reference run of the same candidate (the ``expected`` outputs its sandbox run computed) and
with the shape the graph declares for it; a candidate the evaluator refuses, or that it
computes with another shape, is rejected like a candidate that does not reproduce (dropping
a ReduceMax's ``keepdims=0`` made a rank-2 output of one declared a scalar, and the
optimizer's correct rewrite of it an "invalid model").

Einsum gets one rule more: the evaluator's numpy einsum broadcasts a dimension of 1 against
another where the spec asks the dimensions of one subscript label to agree
(:func:`einsum_mismatch`; a reduction that shrank an input to 1 made such models).

The evaluator runs only in a sandbox worker (:func:`reference_verdict` through
``Sandbox.call``): a model can crash or hang it. It is slow on large models, so candidates of
more than :data:`MAX_NODES` nodes are not checked, and a check that outlives
:data:`SECONDS` counts as "cannot tell"; so does an operator the evaluator does not implement.
"Cannot tell" accepts the candidate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from fuzzer.reduce.candidate import Built

#: candidates with more nodes than this (subgraphs included) are accepted unchecked: the
#: minimized models that end in a bundle are far smaller, and the evaluator is slow.
MAX_NODES = 200
#: seconds (wall clock) one check may take in its worker before it counts as "cannot tell".
SECONDS = 5.0

#: verdict kinds of :class:`Verdict`.
VALID, INVALID, UNKNOWN = "valid", "invalid", "unknown"

#: lower-case fragments of the evaluator's messages for what it does not implement (an
#: operator, an opset version, a domain, an attribute value): "cannot tell", not invalid.
_UNSUPPORTED = ("no implementation", "not implemented", "no registered", "is unknown",
                "unsupported", "not supported")


class Verdict(NamedTuple):
    """What the reference evaluator says of one model.

    Attributes:
        kind: :data:`VALID` (it ran and every output has the expected shape),
            :data:`INVALID` (it refused the model, or an output's shape differs), or
            :data:`UNKNOWN` (cannot tell: too large, too slow, not implemented, worker died).
        reason: one line saying why (empty for :data:`VALID`).
    """

    kind: str
    reason: str = ""


def output_shapes(outputs: Mapping[str, Any]) -> dict[str, tuple[int, ...]]:
    """``{output name: shape}`` of the tensor outputs among ``outputs`` (``{name: value}``, as
    onnxruntime returns them); sequences, maps and optionals are left out."""
    return {name: tuple(int(d) for d in value.shape) for name, value in outputs.items()
            if isinstance(value, np.ndarray)}


def unsupported(exc: BaseException) -> bool:
    """Whether ``exc``, raised by the reference evaluator, says it does not implement what
    the model uses (rather than that the model is wrong)."""
    if isinstance(exc, NotImplementedError):
        return True
    text = str(exc).lower()
    return any(fragment in text for fragment in _UNSUPPORTED)


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0][:300] if lines else ''}"


def reference_verdict(data: bytes, feeds: Mapping[str, np.ndarray],
                      shapes: Mapping[str, Sequence[int]]) -> Verdict:
    """Run a model in :class:`onnx.reference.ReferenceEvaluator` and compare its output shapes
    with the expected ones. Call it in a sandbox worker (``Sandbox.call``), never in a
    campaign's own process: the evaluator can crash or hang on a hostile model, and it takes
    as long as the model needs (no node limit or timeout here; :class:`ReferenceGate` bounds
    both).

    Args:
        data: the serialized model (``onnx.ModelProto`` bytes).
        feeds: ``{graph input name: ndarray}`` (any dtypes and shapes), the feeds onnxruntime
            ran the model on; entries that are no graph input are ignored.
        shapes: ``{graph output name: shape}`` (tuples of ints) of onnxruntime's outputs for
            the same feeds (:func:`output_shapes`); outputs not listed are not compared.

    Returns:
        :class:`Verdict`: :data:`VALID` where the evaluator ran the model and every listed
        output has the listed shape; :data:`INVALID` where it raised (the reason names the
        exception) or an output's shape differs; :data:`UNKNOWN` where it does not implement
        something the model uses (:func:`unsupported`) or a graph input has no feed.

    Raises:
        google.protobuf.message.DecodeError: ``data`` is not a serialized model.
    """
    import warnings

    import onnx
    from onnx.reference import ReferenceEvaluator

    model = onnx.ModelProto()
    model.ParseFromString(data)
    graph = model.graph
    initialized = {t.name for t in graph.initializer}
    inputs = [i.name for i in graph.input]
    missing = [n for n in inputs if n not in feeds and n not in initialized]
    if missing:
        return Verdict(UNKNOWN, f"no feed for graph input(s) {missing}")
    given = {n: feeds[n] for n in inputs if n in feeds}
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            evaluator = ReferenceEvaluator(model)
            every = evaluator.run(None, given, intermediate=True)
    except Exception as exc:  # the evaluator's errors have no common base class
        if unsupported(exc):
            return Verdict(UNKNOWN, _first_line(exc))
        return Verdict(INVALID, f"the reference evaluator refuses it: {_first_line(exc)}")
    for node in graph.node:
        if node.op_type == "Einsum":
            problem = einsum_mismatch(node, [every.get(name) for name in node.input])
            if problem:
                return Verdict(INVALID, problem)
    values = [every.get(name) for name in evaluator.output_names]
    declared = declared_shapes(graph)
    for name, value in zip(evaluator.output_names, values, strict=False):
        if value is None or isinstance(value, (list, dict)):
            continue
        got = tuple(np.shape(value))
        if name in shapes and got != (want := tuple(int(d) for d in shapes[name])):
            return Verdict(INVALID, f"output {name!r} has shape {list(got)} in the reference "
                                    f"evaluator, {list(want)} in onnxruntime")
        if name in declared and not fits(got, declared[name]):
            dims = ["?" if d is None else d for d in declared[name]]
            return Verdict(INVALID, f"output {name!r} has shape {list(got)}, the graph "
                                    f"declares {dims}")
    return Verdict(VALID)


def declared_shapes(graph: Any) -> dict[str, tuple[int | None, ...]]:
    """``{graph output name: declared shape}`` of the tensor outputs of ``graph`` (a
    GraphProto) that declare one: each dimension its value, None where symbolic or unknown;
    outputs that declare no shape are left out."""
    out: dict[str, tuple[int | None, ...]] = {}
    for value in graph.output:
        tensor = value.type.tensor_type
        if value.type.HasField("tensor_type") and tensor.HasField("shape"):
            out[value.name] = tuple(d.dim_value if d.HasField("dim_value") else None
                                    for d in tensor.shape.dim)
    return out


def fits(shape: tuple[int, ...], declared: tuple[int | None, ...]) -> bool:
    """Whether a computed ``shape`` agrees with a ``declared`` one: the same rank, and the
    same value for every declared dimension (None: any)."""
    return len(shape) == len(declared) and \
        all(want is None or got == want for got, want in zip(shape, declared, strict=True))


def _label_dims(term: str, shape: tuple[int, ...]) -> list[tuple[str, int]] | None:
    """``(label, dim)`` of each letter of one Einsum operand ``term`` (``"bij"``,
    ``"...ij"``) against its value's ``shape``; None where the rank does not fit."""
    head, dots, tail = term.partition("...")
    if not dots:
        return list(zip(term, shape, strict=True)) if len(term) == len(shape) else None
    if len(head) + len(tail) > len(shape):
        return None
    return [*zip(head, shape, strict=False),
            *zip(tail, shape[len(shape) - len(tail):], strict=True)]


def einsum_mismatch(node: Any, values: Sequence[Any]) -> str | None:
    """Why the Einsum ``node`` (a NodeProto) is outside the ONNX spec on its input
    ``values`` (arrays, None where unknown): a subscript label whose dimensions differ
    between operands or within one. numpy's einsum, which the reference evaluator uses,
    and onnxruntime broadcast a dimension of 1 against any other, so neither refuses such a
    model; None where every label agrees or a shape is unknown."""
    equation = next((a.s.decode() for a in node.attribute if a.name == "equation"), "")
    terms = equation.replace(" ", "").split("->")[0].split(",")
    if len(terms) != len(values) or any(v is None for v in values):
        return None
    seen: dict[str, int] = {}
    for term, value in zip(terms, values, strict=True):
        pairs = _label_dims(term, tuple(np.shape(value)))
        if pairs is None:
            return None
        for label, dim in pairs:
            if seen.setdefault(label, dim) != dim:
                return (f"Einsum {equation!r}: label {label!r} has dimension {seen[label]} "
                        f"and {dim}")
    return None


class ReferenceGate:
    """The spec gate of a reduction: ``gate(built, expected) -> bool``, False for a candidate
    the reference evaluator proves invalid (:func:`reference_verdict` in a worker of
    ``sandbox``), True otherwise ("cannot tell" included).

    A :class:`fuzzer.reduce.signature_check.SignatureCheck` calls it only for candidates that
    reproduced, with the candidate's own reference outputs. Verdicts are cached by the
    candidate's fingerprint. Where ``original`` is given and a candidate is rejected, the
    original model is checked once too: where the evaluator proves the original invalid as
    well, no candidate can keep a validity the original lacks, so the gate turns itself off
    (:attr:`enabled`) rather than stop the reduction. Not thread-safe (a SignatureCheck checks
    one candidate at a time).

    Args:
        sandbox: a :class:`fuzzer.execution.sandbox.Sandbox` (anything with ``call``).
        original: ``(built, expected)`` of the model the reduction starts from
            (``expected``: its onnxruntime outputs ``{name: value}``, or None), or None.
        max_nodes: candidates with more nodes (subgraphs included) are accepted unchecked.
        seconds: timeout (wall clock) of one check in its worker; a check that outlives it
            is accepted.

    Attributes:
        checked: checks run in a worker; rejected: candidates refused.
        enabled: False once the original proved invalid too (every candidate accepted).
        last: the verdict of the last check run (None before the first).
    """

    def __init__(self, sandbox: Any,
                 original: tuple[Built, Mapping[str, Any] | None] | None = None,
                 max_nodes: int = MAX_NODES, seconds: float = SECONDS) -> None:
        self.sandbox = sandbox
        self.original = original
        self.max_nodes = max_nodes
        self.seconds = seconds
        self.enabled = True
        self.checked = 0
        self.rejected = 0
        self.last: Verdict | None = None
        self._verdicts: dict[str, Verdict] = {}

    def __call__(self, built: Built, expected: Mapping[str, Any] | None) -> bool:
        """Whether candidate ``built`` passes: True unless :meth:`verdict` is
        :data:`INVALID` (and the gate is :attr:`enabled`).

        Args:
            built: the candidate (model and feeds).
            expected: its onnxruntime reference outputs ``{output name: value}``; None (a
                run that kept none: a finding before the outputs are compared) checks that
                the evaluator runs it, with no output shapes to compare.

        Raises nothing: a worker that dies or times out, or a failed call, is "cannot tell".
        """
        if not self.enabled:
            return True
        if self.verdict(built, expected or {}).kind != INVALID:
            return True
        if self.original is not None:
            start, start_expected = self.original
            self.original = None  # checked once
            if self.verdict(start, start_expected or {}).kind == INVALID:
                self.enabled = False
                return True
        self.rejected += 1
        return False

    def verdict(self, built: Built, expected: Mapping[str, Any]) -> Verdict:
        """The :class:`Verdict` of ``built`` against the shapes of ``expected`` (cached);
        :data:`UNKNOWN` for a model over :attr:`max_nodes` nodes, and where the worker
        outlived :attr:`seconds`, died, or the call failed otherwise."""
        from fuzzer.reduce.graph import count_nodes
        from fuzzer.reduce.predicate import fingerprint

        nodes = count_nodes(built.model.graph)
        if nodes > self.max_nodes:
            return Verdict(UNKNOWN, f"{nodes} nodes, over the limit of {self.max_nodes}")
        key = fingerprint(built)
        if key not in self._verdicts:
            self._verdicts[key] = self._run(built, expected)
        return self._verdicts[key]

    def _run(self, built: Built, expected: Mapping[str, Any]) -> Verdict:
        self.checked += 1
        try:
            verdict = self.sandbox.call(reference_verdict, built.model.SerializeToString(),
                                        dict(built.feeds), output_shapes(expected),
                                        timeout=self.seconds)
        except Exception as exc:  # SandboxError (timeout, death) or a failure of the call
            verdict = Verdict(UNKNOWN, _first_line(exc))
        self.last = verdict
        return verdict
