"""The Target base class and the registry of targets.

A target adapts one optimizer to optfuzz and owns everything optfuzz knows about it: its
configuration space (:meth:`Target.configurations`), its rewrite names (passes), how to run a
sub-list of them (:meth:`Target.with_passes`, used by localization), which settings
localization may switch off (:meth:`Target.relaxations`), the anchor op types of its passes
(:meth:`Target.anchors`, localization's cheap evidence), what its oracles must know about a
configuration (:meth:`Target.oracle_context`), and how repro.py calls it
(:meth:`Target.repro_snippet`). No module outside ``fuzzer/targets`` names a target's passes.

Built-in targets are listed in the registry :data:`TARGETS`; an installed distribution adds
one through the ``optfuzz.targets`` entry-point group (:data:`ENTRY_POINT_GROUP`, value
"module:Class"), and its name joins the registry.

Configurations are JSON-able dicts. Pass-list targets understand ``{"passes": [...],
"fixed_point": bool}``; a target whose rewrites are not named passes overrides the pass
methods.
"""

from __future__ import annotations

import importlib
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fuzzer.errors import InputError
from fuzzer.registry import Registry
from generators.hints import GenerationHints
from oracles import shows

#: entry-point group through which an installed distribution adds a target: each entry point
#: is named like the target, its value is "module:Class" (the built-in targets' format).
ENTRY_POINT_GROUP = "optfuzz.targets"


def _plugin_value(point: Any) -> str:
    """The "module:Class" of a target plugin's entry point.

    Raises:
        ValueError: the value is not of that form.
    """
    module, _, attr = point.value.partition(":")
    if not module.strip() or not attr.strip():
        raise ValueError(f"its value {point.value!r} is not 'module:Class'")
    return f"{module.strip()}:{attr.strip()}"


#: target name -> "module:attribute" of its class, imported lazily (heavy imports): the
#: built-in targets, then the plugins of :data:`ENTRY_POINT_GROUP` (a plugin named like a
#: built-in target, or whose value is not "module:Class", is left out with one warning line,
#: once per process).
TARGETS: Registry[str] = Registry("target", {
    "onnxoptimizer": "fuzzer.targets.onnxoptimizer.target:OnnxOptimizerTarget",
    "fake": "fuzzer.targets.fake:FakeTarget",
    "onnxruntime": "fuzzer.targets.onnxruntime.target:OnnxRuntimeTarget",
    "onnxruntime-transformers":
        "fuzzer.targets.onnxruntime_transformers.target:OnnxRuntimeTransformersTarget",
    "onnxscript": "fuzzer.targets.onnxscript.target:OnnxScriptTarget",
    "version-converter": "fuzzer.targets.version_converter.target:VersionConverterTarget",
    "onnxsim": "fuzzer.targets.onnxsim.target:OnnxSimTarget",
    "onnxslim": "fuzzer.targets.onnxslim.target:OnnxSlimTarget",
}, group=ENTRY_POINT_GROUP, load=_plugin_value)

#: target name -> the optfuzz extra (pyproject.toml) that installs its package.
EXTRAS: dict[str, str] = {"onnxsim": "onnxsim", "onnxslim": "onnxslim",
                          "onnxscript": "onnxscript"}

#: the target a command uses when none is named.
DEFAULT_TARGET = "onnxoptimizer"

#: Anchor of a pass that may act on any graph (it looks at every node or at initializers).
ANY: frozenset[str] = frozenset({"*"})


@dataclass(frozen=True)
class DocumentedBehaviour:
    """Behaviour a target documents, so a finding that shows it is no bug: it is counted in
    campaign.json under :attr:`name`, never bundled.

    Attributes:
        name: short name, e.g. ``ir-version-upgrade``.
        source: where the target documents it (file and what it says).
        applies: ``(finding, config) -> bool``: whether a finding (``oracles.base.Finding``)
            of a run with ``config`` is this behaviour.
    """

    name: str
    source: str
    applies: Callable[[Any, dict[str, Any]], bool]


#: What onnxruntime, the reference, cannot load or run in a *valid* optimized model for lack
#: of a kernel or a rule of its own (the optimized model passed the checker and strict shape
#: inference, or its finding would be ``invalid-model``): a portability note about the
#: reference, counted under its name like documented behaviour and never bundled, whatever
#: the target. onnxruntime documents the types each CPU kernel implements in
#: docs/OperatorKernels.md (Gemm has no int64 kernel; a "not implemented" status names the
#: missing kernel) and checks pads against the kernel size in
#: core/providers/common/pool_attributes.h, a rule of its own that the ONNX spec does not make.
_NO_KERNEL = ("NOT_IMPLEMENTED", "Could not find an implementation for",
              "Pad should be smaller than kernel",
              # the same check as the message's first line shows it (cut before its words)
              "pool_attributes.h:88 onnxruntime::PoolAttributes::PoolAttributes")
PORTABILITY: tuple[DocumentedBehaviour, ...] = (
    DocumentedBehaviour(
        "onnxruntime-lacks-a-kernel",
        "onnxruntime docs/OperatorKernels.md (types per CPU kernel); "
        "core/providers/common/pool_attributes.h (pads smaller than the kernel)",
        lambda finding, config: shows(finding, "load-failure", "runtime-failure")
        and any(mark in finding.message for mark in _NO_KERNEL)),
)


def _sparse_refused(finding: Any, config: dict[str, Any]) -> bool:
    """An optimizer error whose message or traceback is an IR's refusal of a sparse tensor
    attribute (:data:`SPARSE_ATTRIBUTES_REFUSED`)."""
    text = f"{finding.message}\n{finding.detail.get('traceback') or ''}"
    return shows(finding, "optimizer-error") and ("Sparse tensors not supported" in text or
                                                   "Sparse tensors are not supported" in text)


#: A Constant's ``sparse_value`` (or any sparse tensor attribute) refused on load by the IR a
#: target works in: onnx's C++ IR, which onnxoptimizer and the version converter load every
#: model into, and onnx_ir, onnxscript's. Shared by those targets' documented behaviours.
SPARSE_ATTRIBUTES_REFUSED = DocumentedBehaviour(
    "sparse-attributes-refused",
    "onnx/common/ir_pb_converter.cc, convertAttribute: fail_convert(\"Sparse tensors not "
    "supported.\") for a SPARSE_TENSOR attribute; onnx_ir/serde.py: \"Sparse tensors are not "
    "supported yet\"",
    _sparse_refused)


class Target:
    """A system under test. Subclasses set :attr:`name` and implement :meth:`version`,
    :meth:`optimize`, :meth:`available_passes`, :meth:`default_passes`,
    :meth:`configurations` and :meth:`repro_snippet`; the rest has defaults for pass-list
    optimizers.

    Attributes:
        name: registry name, also the first field of every signature.
        package: see the class attribute's comment.
        saves_its_own_form: see the class attribute's comment.
    """

    name: str = ""
    #: the distribution on the package index that installs the target (``onnxslim``), whose
    #: other builds ``optfuzz replay --against`` and ``optfuzz bisect`` install; None where
    #: there is none.
    package: str | None = None
    #: whether the target's output differs from its input with no pass at all (onnxruntime
    #: saves Constant nodes as initializers): footprints are then taken against that output.
    saves_its_own_form: bool = False
    #: whether the target loads a Constant holding ``sparse_value`` (its generated models
    #: then hold some: :attr:`generators.hints.GenerationHints.sparse`); False where its IR
    #: refuses them by design (:data:`SPARSE_ATTRIBUTES_REFUSED`), so no case is spent on it.
    takes_sparse_constants: bool = False
    #: whether one run of a configuration is nothing but its passes applied in turn to one
    #: in-memory graph, so that running the rest of the passes on a saved intermediate is
    #: the same run but for what saving drops: the culprit search may then split a run to
    #: find damage that saving hides (:mod:`fuzzer.localize.culprit`). False where a run
    #: does more around its passes (shape inference, folding, sorting on every call).
    splits_at_saved_models: bool = False
    #: whether the target reports its own branch edges (:mod:`fuzzer.targets.hits`),
    #: so that code coverage and ``--guided`` need no instrumented build of it.
    reports_edges: bool = False
    #: how code coverage (``optfuzz coverage --code``) and ``--guided`` measure the target's
    #: own code, a key of :data:`fuzzer.edges.kinds.EDGE_KINDS`: ``gcov`` (its instrumented
    #: build, :mod:`fuzzer.builds`), ``hits`` (the branches it names itself,
    #: :mod:`fuzzer.targets.hits`), ``python`` (coverage.py's arcs of
    #: :attr:`coverage_modules`).
    code_coverage: str = "gcov"
    #: the modules holding the rewrites that a ``python`` coverage measures: dotted package
    #: or module names, an ``fnmatch`` pattern allowed in the last part
    #: (``onnxruntime.transformers.fusion_*``); ``pkg.__init__`` is a package's own file.
    coverage_modules: tuple[str, ...] = ()
    #: the GitHub repository (``owner/name``) whose issue tracker takes the target's bugs
    #: (report.md's ``gh issue create --repo`` line); "" where there is none.
    repository: str = ""
    #: the module that builds the target with instrumentation (``build(kind, ...)`` for the
    #: installed version, optionally ``build_checkout(checkout, site, ...)`` for a source
    #: checkout, as :mod:`fuzzer.builds.onnxoptimizer` does); None where optfuzz builds
    #: nothing of it (:mod:`fuzzer.builds` finds it here).
    build_module: str | None = None

    def version(self) -> str:
        """Installed version of the optimizer (e.g. ``"0.4.2"``)."""
        raise NotImplementedError

    def optimize(self, model: Any, config: dict[str, Any]) -> Any:
        """Return the optimized ``onnx.ModelProto``; may raise (an ``optimizer-error``)."""
        raise NotImplementedError

    def available_passes(self) -> list[str]:
        """Every pass (rewrite) name the target accepts."""
        raise NotImplementedError

    def default_passes(self) -> list[str]:
        """The passes a user gets without options, in order."""
        raise NotImplementedError

    def configurations(self, rng: random.Random, passes: list[str] | None) -> dict[str, Any]:
        """Draw the next configuration of a campaign; ``passes`` restricts the pass pool."""
        raise NotImplementedError

    def repro_snippet(self, config: dict[str, Any]) -> str:
        """Python lines that apply the target to a ModelProto ``model`` into ``optimized``,
        using only the target's own package (for repro.py and report.md)."""
        raise NotImplementedError

    def shared_cause(self, finding: Any) -> str | None:
        """The name of a cause outside any one pass that explains ``finding`` (an
        ``oracles.base.Finding``), e.g. a rule the target's serializer breaks whichever
        rewrite touched the model: such findings share one root cause whatever pass
        localization names. None (the default): the breaking pass is the cause."""
        return None

    def motif_hints(self, config: dict[str, Any]) -> list[str]:
        """Pass names that bias the generator's motif choice for a case of ``config``
        (:func:`generators.generate.generate`'s ``passes``): the configuration's own pass
        list; a target whose rewrites have no motifs of their own names analogous ones."""
        return list(config.get("passes") or [])

    def generation_hints(self, config: dict[str, Any]) -> GenerationHints:
        """What the generator is told for a case of ``config``: the :meth:`motif_hints`
        (a target that pins the models' opset or bounds their random ops says so here)."""
        return GenerationHints(passes=tuple(self.motif_hints(config)),
                               sparse=self.takes_sparse_constants)

    def config_phrase(self, config: dict[str, Any]) -> str:
        """Words that place a run of ``config`` for a report's first sentence, after the
        target's name and version (``"at ORT_ENABLE_EXTENDED"``); "" where the pass list
        says it all (the default)."""
        return ""

    def ablation_line(self, config: dict[str, Any], breaking: str, symptom: str) -> str:
        """One sentence, in the target's own vocabulary, of what localization ran to name
        ``breaking`` as the breaking pass of a ``symptom`` finding of ``config``: the
        minimal pass list without it no longer shows the symptom."""
        return (f"Without `{breaking}` (the rest of the pass list kept) the model shows no "
                f"{symptom}.")

    def accepts_pass(self, name: str) -> bool:
        """Whether the installed target has a pass called ``name``."""
        return name in self.available_passes()

    def default_config(self) -> dict[str, Any]:
        """The configuration a user gets without options."""
        return {"passes": self.default_passes(), "fixed_point": False}

    def configuration_space(self) -> str:
        """One line saying what a configuration chooses (``optfuzz targets`` shows it): here
        the settings of :meth:`default_config` with their defaults, and pass lists over
        :meth:`available_passes`."""
        settings = [f"{key}={value}" for key, value in self.default_config().items()
                    if key != "passes"]
        lists = f"pass lists over {len(self.available_passes())} passes"
        return "; ".join([lists, *settings])

    def passes_of(self, config: dict[str, Any]) -> list[str]:
        """The ordered pass list ``config`` runs (:meth:`unnamed_passes` where it names
        none)."""
        passes = config.get("passes")
        return self.unnamed_passes(config) if passes is None else list(passes)

    def unnamed_passes(self, config: dict[str, Any]) -> list[str]:
        """The passes a configuration that names none runs: the default list here; a target
        whose other settings choose them (a level, a model type) says which."""
        return list(self.default_passes())

    def with_passes(self, config: dict[str, Any], passes: Sequence[str]) -> dict[str, Any]:
        """``config`` running exactly ``passes`` (in that order), everything else kept."""
        return dict(config, passes=list(passes))

    def stages(self, config: dict[str, Any]) -> bool:
        """Whether a prefix of ``config``'s pass list (:meth:`with_passes`) runs on its own
        and gives the model the whole list would have passed on at that point, so that the
        culprit search (:mod:`fuzzer.localize.culprit`) can judge every intermediate; True
        for a pass-list optimizer (the default)."""
        return True

    def relaxations(self, config: dict[str, Any]) -> dict[str, dict[str, Any]]:
        """Settings of ``config`` that localization may switch off to see whether a finding
        needs them: setting name -> ``config`` without it (``fixed_point`` where it is on)."""
        if config.get("fixed_point"):
            return {"fixed_point": dict(config, fixed_point=False)}
        return {}

    def anchors(self) -> Mapping[str, frozenset[str]]:
        """Pass -> op types one of which must be present for the pass to act (:data:`ANY`
        for a pass that may act on any graph); passes missing here are always plausible."""
        return {}

    def unreachable(self) -> Mapping[str, str]:
        """Pass -> why no generated graph run through this target on this machine can make
        it change (``optfuzz coverage`` names the reason); empty by default."""
        return {}

    def documented_behaviours(self) -> tuple[DocumentedBehaviour, ...]:
        """What the target documents about its own behaviour (never bundled)."""
        return ()

    def documented(self, finding: Any, config: dict[str, Any]) -> DocumentedBehaviour | None:
        """The documented behaviour ``finding`` (of a run with ``config``) shows, or the
        portability note about the reference it is (:data:`PORTABILITY`), or None."""
        return next((b for b in (*self.documented_behaviours(), *PORTABILITY)
                     if b.applies(finding, config)), None)

    def oracle_context(self, config: dict[str, Any]) -> dict[str, Any]:
        """Facts about ``config`` that the oracles need, put into ``Outcome.extra``:
        ``unused_initializers_are_bloat`` (bool: the configuration promises their removal),
        ``interface_may_change`` (bool: it renames or retypes the graph interface on
        purpose) and ``cleanup_ran`` (bool: it ran the target's own dead-node cleanup, so
        the bloat oracle counts any node growth as surviving), and ``judge_until`` (the
        last stage of :data:`oracles.base.STAGES` the test runs: ``"compare"``, or
        ``"load"`` for a configuration whose outputs are not the model's, or
        ``"optimize"`` for one whose output the target documents as non-conforming).
        Absent keys take the oracles' defaults (True, False, False, ``"compare"``)."""
        return {}


_cache: dict[str, Target] = {}


class TargetUnavailable(ImportError):
    """A registered target whose module cannot be imported here: its package is missing, or a
    plugin's module fails on import. The message is one line."""


def target_names() -> list[str]:
    """Names of all registered targets, plugins included, in name order."""
    return sorted(TARGETS)


def install_hint(name: str) -> str | None:
    """The command that installs the package of built-in target ``name`` (None: it needs
    nothing beyond optfuzz's own dependencies)."""
    extra = EXTRAS.get(name)
    return f"pip install 'optfuzz[{extra}]'" if extra else None


def _unavailable(name: str, value: str, exc: BaseException) -> TargetUnavailable:
    """The one-line :class:`TargetUnavailable` for target ``name`` (registered as ``value``)
    whose import or construction raised ``exc``."""
    hint = install_hint(name) if TARGETS.builtin(name) else None
    if hint and isinstance(exc, ImportError):
        return TargetUnavailable(f"target {name} needs {exc.name or 'its package'}, which is "
                                 f"not installed: {hint}")
    return TargetUnavailable(f"target {name} ({value}) cannot be imported: "
                             f"{type(exc).__name__}: {first_line(exc)}")


def _built(name: str, value: str, make: Callable[[], Any]) -> Any:
    """``make()``, the import (and construction) of target ``name``'s class ``value``
    ("module:Class").

    Raises:
        TargetUnavailable: it raised ImportError (a missing package), or, for a plugin,
            any error.
    """
    try:
        return make()
    except ImportError as exc:
        raise _unavailable(name, value, exc) from None
    except Exception as exc:
        if TARGETS.builtin(name):
            raise
        raise _unavailable(name, value, exc) from None


def _class_of(value: str) -> type[Target]:
    """The class ``value`` ("module:Class") names, imported."""
    module, attr = value.split(":", 1)
    return getattr(importlib.import_module(module), attr)


def _make(name: str, value: str) -> Target:
    """An instance of the class ``value`` ("module:Class") names.

    Raises:
        TargetUnavailable: the module or class cannot be imported, or the class cannot be
            built here (a missing package; for a plugin, any error).
    """
    return _built(name, value, lambda: _class_of(value)())


def target_class(name: str) -> type[Target]:
    """The class of target ``name`` (built-in or plugin), imported but not built: its class
    attributes (:attr:`Target.repository`) without the target's own package, which the
    built-in targets import only when built.

    Raises:
        KeyError: for an unknown name; the message lists the known ones.
        TargetUnavailable: its module cannot be imported here.
    """
    value = _registered(name)
    return _built(name, value, lambda: _class_of(value))


def _registered(name: str) -> str:
    """The "module:Class" of target ``name``.

    Raises:
        KeyError: for an unknown name; the message lists the known ones.
    """
    return TARGETS[name]


def first_line(exc: BaseException) -> str:
    """The first line of ``exc``'s message ("(no message)" when empty)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else "(no message)"


def get_target(name: str) -> Target:
    """Return the (cached) target adapter called ``name`` (built-in or plugin).

    Raises:
        KeyError: for an unknown name; the message lists the known ones.
        TargetUnavailable: its module cannot be imported here (a missing package names the
            install command).
    """
    if name not in _cache:
        _cache[name] = _make(name, _registered(name))
    return _cache[name]


def cli_target(name: str | None) -> Target:
    """:func:`get_target` for command lines (``None``: :data:`DEFAULT_TARGET`).

    Raises:
        InputError: an unknown name (the message lists the known ones), or a target whose
            package is not installed (the message names the install command, e.g.
            ``pip install 'optfuzz[onnxscript]'``), or a plugin that fails to import.
    """
    try:
        return get_target(name or DEFAULT_TARGET)
    except KeyError as exc:
        raise InputError(exc.args[0]) from None
    except ImportError as exc:
        raise InputError(first_line(exc)) from None


def offers_pass(target: Target) -> Callable[[str], bool]:
    """Whether ``target`` (as installed) has a pass of a given name."""
    return target.accepts_pass


def require_passes(target: Target, passes: Sequence[str]) -> None:
    """Refuse pass names ``target`` does not have.

    Raises:
        InputError: naming the unknown passes.
    """
    bad = [p for p in passes if not target.accepts_pass(p)]
    if bad:
        raise InputError(f"unknown pass(es) {bad} for target {target.name}")
