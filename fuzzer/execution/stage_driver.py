"""The stage driver of one differential test (design.md, "Data flow"): the one copy of it.

Campaign workers drive their cases with it (:func:`fuzzer.execution.pipeline.run_case`), and
every bundle's repro.py carries this file verbatim (:func:`fuzzer.report.repro.render_repro`),
so a change here is a change to both. That is why it imports nothing of optfuzz, only the
standard library, numpy, and onnx and onnxruntime inside the functions that need them, and
why it has no ``from __future__`` import (repro.py holds it in the middle of the script).
What it needs of the oracles it is given: the ``judge`` that runs every oracle
(:func:`oracles.judge`), the :class:`oracles.base.Outcome` record and the order of
:data:`oracles.base.STAGES`.

:class:`StageDriver` has one method per stage, as NNSmith's backends have
``checked_compile``, ``checked_exec`` and ``verify_results``: :meth:`~StageDriver.load_original`
(materialize), :meth:`~StageDriver.run_reference` (reference),
:meth:`~StageDriver.checked_optimize` (optimize), :meth:`~StageDriver.checked_validate`
(validate), :meth:`~StageDriver.checked_load` (load), :meth:`~StageDriver.checked_execute`
(execute) and :meth:`~StageDriver.compare` (compare); :meth:`~StageDriver.verify` runs the
stages after the target in order and judges what they observed. When the original runs is
the caller's choice: a worker runs the target first and the original only where a finding
needs it (:mod:`fuzzer.execution.pipeline`), repro.py runs the original first.

The reference runs are configured as design.md fixes: CPU execution provider,
``ORT_DISABLE_ALL`` (onnxruntime's own rewrites neither hide nor cause a difference), logging
silenced, one intra-op thread.
"""

import time
import traceback
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

import numpy as np


@lru_cache(maxsize=4)
def session_options(level: str = "ORT_DISABLE_ALL") -> Any:
    """Shared ``onnxruntime.SessionOptions`` for a graph optimization level name of
    onnxruntime (``"ORT_DISABLE_ALL"``, ``"ORT_ENABLE_BASIC"``, ...).

    Raises:
        AttributeError: an unknown level name.
    """
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
    options.log_severity_level = 4  # fatal only: errors become findings
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return options


def make_session(model_bytes: bytes, level: str = "ORT_DISABLE_ALL") -> Any:
    """An ``onnxruntime.InferenceSession`` on CPU for serialized ``model_bytes``.

    Raises:
        Exception: whatever onnxruntime raises for a model it cannot load.
    """
    import onnxruntime as ort

    return ort.InferenceSession(model_bytes, session_options(level),
                                providers=["CPUExecutionProvider"])


def run_session(session: Any, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Run ``session`` on the feeds it declares and return ``{output name: ndarray}`` in the
    graph's output order.

    Feeds the session does not declare are left out (an optimizer may drop an unused input).

    Raises:
        KeyError: the session declares an input that ``feeds`` lacks.
        Exception: whatever onnxruntime raises while running.
    """
    wanted = [i.name for i in session.get_inputs()]
    missing = [n for n in wanted if n not in feeds]
    if missing:
        raise KeyError(f"model needs input(s) {missing} that the original did not have")
    names = [o.name for o in session.get_outputs()]
    values = session.run(names, {n: feeds[n] for n in wanted})
    return dict(zip(names, values, strict=True))


#: how a ``.npz`` archive keys what is no array (:func:`pack_values`): the elements of a
#: sequence value ``name`` are ``name::seq:0``, ``name::seq:1``, ... after ``name::seq``
#: (its length), an empty optional is ``name::none``.
SEQ_KEY, NONE_KEY = "::seq", "::none"


def pack_values(values: dict[str, Any]) -> dict[str, np.ndarray]:
    """``values`` (input feeds or outputs: an array, a list of arrays for a sequence, None
    for an empty optional) as arrays only, keyed as :data:`SEQ_KEY` and :data:`NONE_KEY`
    say, for ``np.savez``; :func:`unpack_values` reverses it."""
    packed: dict[str, np.ndarray] = {}
    for name, value in values.items():
        if value is None:
            packed[name + NONE_KEY] = np.zeros(0, dtype=np.int8)
        elif isinstance(value, list):
            packed[name + SEQ_KEY] = np.array(len(value), dtype=np.int64)
            for index, item in enumerate(value):
                packed[f"{name}{SEQ_KEY}:{index}"] = item
        else:
            packed[name] = value
    return packed


def unpack_values(arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    """The values :func:`pack_values` packed into ``arrays``, in their order; arrays
    keyed otherwise stay as they are."""
    values: dict[str, Any] = {}
    for key, array in arrays.items():
        if key.endswith(NONE_KEY):
            values[key[:-len(NONE_KEY)]] = None
        elif key.endswith(SEQ_KEY):
            name = key[:-len(SEQ_KEY)]
            values[name] = [arrays[f"{name}{SEQ_KEY}:{i}"] for i in range(int(array))]
        elif SEQ_KEY + ":" not in key:
            values[key] = array
    return values


def error_text(exc: BaseException, limit: int = 300) -> str:
    """``"<ExceptionType>: <message>"``, the message's first non-empty line stripped and cut
    to ``limit`` characters, as :func:`oracles.base.first_line` cuts it (``"(no message)"``
    where it has none)."""
    line = next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), "")
    return f"{type(exc).__name__}: {line[:limit] or '(no message)'}"


def validate(model: Any) -> str | None:
    """None when the model (an ``onnx.ModelProto`` or its serialized bytes, which spares
    the checker a serialization) passes checker full_check, else the error
    (:func:`error_text`). ``full_check`` runs strict, type-checking shape inference
    (onnx's checker.cc: ``ShapeInferenceOptions{check_type=true, error_mode=1}``), so a
    second call of ``infer_shapes(check_type=True, strict_mode=True)`` could not fail where
    it passed."""
    import onnx

    try:
        onnx.checker.check_model(model, full_check=True)
    except Exception as exc:
        return error_text(exc)
    return None


def interface_feeds(original: Any, optimized: Any, feeds: dict[str, Any]) -> dict[str, Any]:
    """The original's ``feeds`` for ``optimized`` (``onnx.ModelProto`` both), a model whose
    configuration renames or retypes the graph inputs on purpose (onnxoptimizer's
    ``rename_input_output``, ``rewrite_input_dtype``): matched by position among the inputs
    that are not initializers, each cast to the element type the optimized input declares.
    ``feeds`` as they are where the input counts differ."""
    from onnx import helper

    def runtime_inputs(graph: Any) -> list[Any]:
        inits = {t.name for t in graph.initializer}
        return [v for v in graph.input if v.name not in inits]

    before, after = runtime_inputs(original.graph), runtime_inputs(optimized.graph)
    if len(before) != len(after) or any(v.name not in feeds for v in before):
        return feeds
    adapted = {}
    for old, new in zip(before, after, strict=True):
        value = feeds[old.name]
        elem = new.type.tensor_type.elem_type
        if elem and hasattr(value, "astype"):
            value = value.astype(helper.tensor_dtype_to_np_dtype(elem), copy=False)
        adapted[new.name] = value
    return adapted


class StageDriver:
    """One differential test of one model, stage by stage, and what each stage made.

    Entering a stage adds the seconds since the last one to the stage left (``timings``)
    and tells ``announce`` its name. Each ``checked_*`` method returns None where its stage
    passed, else the Outcome of the failure. Every Outcome made here carries the original,
    the optimized model (None before the target returned one), ``task`` and a copy of
    ``extra``: it is ready for ``judge``.

    Args:
        judge: every oracle, ``Outcome -> list of findings`` most severe first
            (:func:`oracles.judge`).
        outcome: the Outcome record (:class:`oracles.base.Outcome`), called as
            ``outcome(status, stage, **fields)``.
        stages: every stage name in order (:data:`oracles.base.STAGES`); the first is
            entered at once.
        announce: told the name of each stage entered (a worker's shared stage slot,
            repro.py's marks on its output), or None.

    Attributes:
        model: the original, an ``onnx.ModelProto`` (None before :meth:`load_original`).
        model_bytes: its serialization (bytes).
        feeds: its input feeds, ``{graph input name: ndarray}``.
        task: the model's task category for the task-level oracles, or None.
        extra: ``Outcome.extra`` of every outcome made here (the target's oracle context).
            Two of its keys steer the stages: ``judge_until``, the last stage of ``stages``
            run after the target (default ``"compare"``), and ``interface_may_change``
            (the optimized model is fed by position, :func:`interface_feeds`).
        expected: the original's outputs, ``{output name: ndarray}`` in graph order (None
            before :meth:`run_reference`).
        optimized: the target's output, an ``onnx.ModelProto`` (None before it returned).
        optimized_bytes: its serialization (bytes), or None.
        changed: whether ``optimized_bytes`` differ from ``model_bytes`` (None before the
            target returned).
        optimize_s: seconds of the target's call alone (None before it returned).
        session: the optimized model's onnxruntime session (None before :meth:`checked_load`).
        actual: the optimized model's outputs, laid out as ``expected`` (None before
            :meth:`checked_execute`).
        passed_over: findings of stage ``validate`` that :meth:`verify` went past; they
            come last among its findings.
        timings: seconds spent per stage, ``{stage: seconds}``; the stage being run is
            counted when the next one is entered.
        stage: the stage entered last.
        started: ``time.perf_counter()`` at construction, in seconds.
    """

    def __init__(self, judge: Callable[[Any], list[Any]], outcome: Callable[..., Any],
                 stages: Sequence[str], announce: Callable[[str], None] | None = None) -> None:
        self.judge, self.outcome, self.stages = judge, outcome, tuple(stages)
        self.announce = announce
        self.model: Any = None
        self.model_bytes = b""
        self.feeds: dict[str, np.ndarray] = {}
        self.task: str | None = None
        self.extra: dict[str, Any] = {}
        self.expected: dict[str, np.ndarray] | None = None
        self.optimized: Any = None
        self.optimized_bytes: bytes | None = None
        self.changed: bool | None = None
        self.optimize_s: float | None = None
        self.session: Any = None
        self.actual: dict[str, np.ndarray] | None = None
        self.passed_over: list[Any] = []
        self.timings: dict[str, float] = {}
        self.started = self._clock = time.perf_counter()
        self.stage = self.stages[0]
        if announce is not None:
            announce(self.stage)

    def enter(self, stage: str) -> None:
        """Leave the current stage (its seconds go to ``timings``) and enter ``stage``."""
        now = time.perf_counter()
        self.timings[self.stage] = self.timings.get(self.stage, 0.0) + now - self._clock
        self._clock, self.stage = now, stage
        if self.announce is not None:
            self.announce(stage)

    def seconds_in(self, stage: str) -> float | None:
        """Seconds spent in ``stage`` so far, the time of the stage running now included;
        None where it never ran."""
        spent = self.timings.get(stage)
        if stage == self.stage:
            return (spent or 0.0) + time.perf_counter() - self._clock
        return spent

    def elapsed(self) -> float:
        """Seconds since the driver was made."""
        return time.perf_counter() - self.started

    def observed(self, status: str, stage: str, **fields: Any) -> Any:
        """An Outcome of this test: ``status`` at ``stage`` with ``fields``, the original and
        the optimized model, ``task`` and a copy of ``extra``."""
        return self.outcome(status, stage, original=self.model, optimized=self.optimized,
                            task=self.task, extra=dict(self.extra), **fields)

    def judged(self, outcome: Any) -> tuple[Any, list[Any]]:
        """``(outcome, its findings)``: ``judge``'s, most severe first, then ``passed_over``."""
        return outcome, self.judge(outcome) + self.passed_over

    def judges(self, stage: str) -> bool:
        """Whether the test runs ``stage`` after the target (``extra["judge_until"]``)."""
        return self.stages.index(stage) <= \
            self.stages.index(self.extra.get("judge_until", "compare"))

    def load_original(self, model: Any, feeds: dict[str, np.ndarray],
                      model_bytes: bytes | None = None, *, task: str | None = None,
                      extra: dict[str, Any] | None = None, check: bool = False) -> str | None:
        """Stage ``materialize`` (entered at construction): take the original ``model`` (an
        ``onnx.ModelProto``; ``model_bytes``, its serialization where the caller has it),
        its ``feeds``, its ``task`` and the ``extra`` of every outcome. With ``check``, the
        original must pass onnx's checks (:func:`validate`): their error where it does not,
        else None."""
        self.model, self.feeds, self.task = model, feeds, task
        self.model_bytes = model_bytes or model.SerializeToString()
        self.extra = dict(extra or {})
        return validate(self.model_bytes) if check else None

    def run_reference(self) -> dict[str, np.ndarray]:
        """Stage ``reference``, once: the original's outputs in onnxruntime (``expected``);
        a later call returns them.

        Raises:
            Exception: whatever onnxruntime raises on the original. Then no test can run:
                the model is an unusable seed, not a finding.
        """
        if self.expected is None:
            self.enter("reference")
            self.expected = run_session(make_session(self.model_bytes), self.feeds)
        return self.expected

    def checked_optimize(self, optimize: Callable[[Any], Any]) -> Any | None:
        """Stage ``optimize``: ``optimize(model)``, the target's call, which returns an
        ``onnx.ModelProto``. Sets ``optimized``, ``optimized_bytes``, ``changed`` and
        ``optimize_s``; the error outcome, with the traceback, where it raises."""
        self.enter("optimize")
        start = time.perf_counter()
        try:
            optimized = optimize(self.model)
        except Exception as exc:
            return self.observed("error", "optimize", error=error_text(exc),
                                 traceback=traceback.format_exc())
        self.optimize_s = time.perf_counter() - start
        self.optimized, self.optimized_bytes = optimized, optimized.SerializeToString()
        self.changed = self.optimized_bytes != self.model_bytes
        return None

    def checked_validate(self) -> Any | None:
        """Stage ``validate``: the error outcome where the optimized model fails onnx's
        checks (:func:`validate`) and the original passes them, else None."""
        self.enter("validate")
        problem = validate(self.optimized_bytes)
        if problem is None or validate(self.model_bytes) is not None:
            return None
        return self.observed("error", "validate", error=problem)

    def checked_load(self) -> Any | None:
        """Stage ``load``: the optimized model's onnxruntime session (``session``); the
        error outcome where onnxruntime cannot load it."""
        self.enter("load")
        try:
            self.session = make_session(self.optimized_bytes)
        except Exception as exc:
            return self.observed("error", "load", error=error_text(exc), expected=self.expected)
        return None

    def checked_execute(self) -> Any | None:
        """Stage ``execute``: the optimized model's outputs on the original's feeds
        (``actual``); the error outcome where onnxruntime fails to run it. The feeds stay
        the original's: repro.py and a determinism rerun run the original on them."""
        feeds = interface_feeds(self.model, self.optimized, self.feeds) \
            if self.extra.get("interface_may_change") else self.feeds
        self.enter("execute")
        try:
            self.actual = run_session(self.session, feeds)
        except Exception as exc:
            return self.observed("error", "execute", error=error_text(exc),
                                 expected=self.expected)
        return None

    def compare(self) -> Any:
        """Stage ``compare``: the outcome of a test whose every stage ran, the original's
        and the optimized model's outputs side by side for the oracles to compare."""
        self.enter("compare")
        return self.observed("ok", "compare", expected=self.expected, actual=self.actual)

    def verify(self, passes_invalid: Callable[[list[Any]], bool]) -> tuple[Any, list[Any]]:
        """The stages after the target that ``extra["judge_until"]`` asks for, judged:
        ``(the last stage's outcome, its findings)`` (:meth:`judged`). Call it once
        :meth:`checked_optimize` returned None; the outcomes carry ``expected`` where
        :meth:`run_reference` ran before.

        A model the target returned unchanged runs no further (its outputs would be
        compared with themselves). An optimized model that fails onnx's checks ends the test
        unless ``passes_invalid(its findings)`` says go on (a worker: the target documents
        such output; repro.py: the bundle's symptom shows later); then its findings of
        stage ``validate`` come last (``passed_over``).
        """
        if not self.changed:
            return self.judged(self.observed("ok", "compare"))
        if not self.judges("validate"):  # the target documents a non-conforming output
            return self.judged(self.observed("ok", "optimize"))
        invalid = self.checked_validate()
        if invalid is not None:
            found = self.judge(invalid)
            if not passes_invalid(found):
                return invalid, found
            self.passed_over = [f for f in found if f.stage == "validate"]
        failed = self.checked_load()
        if failed is None and not self.judges("execute"):
            return self.judged(self.observed("ok", "load"))  # the outputs are not the model's
        if failed is None:
            failed = self.checked_execute()
        return self.judged(self.compare() if failed is None else failed)
