"""The bundle metadata record: one typed view of ``meta.json`` (design.md, "meta.json") that
every stage reads and updates.

Schema 1 (the first campaigns) and schema 2 are read; schema 2 is written. Schema 2 keeps
every schema-1 field with its name and meaning and adds ``breaking_pass``,
``enabling_passes``, ``root_cause``, ``variants``, ``trigger``, ``verified``, ``symptoms``
(symptom -> hits: one fault seen through several symptoms), ``exposed_by`` and ``damage``
(the culprit search's verdict); a file written before the last three existed reads as one
symptom with all its hits and no verdict. Fields this
code does not know (at the top level, in ``target`` and in ``nodes``) are kept in ``extra``
mappings and written back verbatim, so a rewritten file is always a superset of what was
read: a schema-1 file is upgraded in place on its first write and loses nothing. Later
optional fields (:data:`LATER_OPTIONAL`: ``state``, the maintainer's state of the bundle,
:mod:`fuzzer.store.bundle_state`) are written only when set.

Written key order: the schema-1 fields (required ones, then ``localization``, ``aliases``,
``replay``), then the schema-2 fields, then the later optional ones (``state``, then the
:data:`UPSTREAM_FIELDS`) where set, then the unknown ones in the order they were read.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fuzzer.store.bundle_state import BundleState

SCHEMA = 2
META_FILE = "meta.json"
#: required fields of schema 1, in the order they are written.
SCHEMA1_REQUIRED = ("schema", "id", "signature", "symptom", "stage", "message", "target",
                    "responsible_passes", "source", "versions", "nodes", "first_seen",
                    "last_seen", "hits")
#: optional fields of schema 1, written (after the required ones) only when present.
SCHEMA1_OPTIONAL = ("localization", "aliases", "replay")
#: fields that schema 2 adds; always written (null or [] where unknown).
SCHEMA2_FIELDS = ("breaking_pass", "enabling_passes", "root_cause", "variants", "trigger",
                  "verified", "symptoms", "exposed_by", "damage")
#: optional fields added after schema 2, written (after the schema-2 fields) only when set.
LATER_OPTIONAL = ("state",)
#: optional fields of the checks against other builds of the target (:mod:`fuzzer.upstream`),
#: written (after ``state``) only when present.
UPSTREAM_FIELDS = ("upstream", "regression")
KNOWN_FIELDS = frozenset(SCHEMA1_REQUIRED + SCHEMA1_OPTIONAL + SCHEMA2_FIELDS + LATER_OPTIONAL
                         + UPSTREAM_FIELDS)
#: meta.json key (kept in :attr:`BundleMeta.extra`) listing the preliminary root-cause keys,
#: taken on found models before reduction, that led to the bundle: a later campaign on the
#: folder (a resumed one) sends such a finding to the bundle as a hit without reducing it.
PRELIMINARY_KEYS = "preliminary_keys"
#: most preliminary keys one bundle keeps (its meta stays small).
MAX_PRELIMINARY_KEYS = 32

_KIND_NAMES = {str: "a string", int: "an integer", dict: "an object", list: "a list"}


class MetaError(ValueError):
    """A meta.json that cannot be used: empty, not JSON, not a JSON object, a newer schema,
    or a field that is missing or of the wrong type.

    Attributes:
        problem: what is wrong, naming the field where one is at fault.
        path: the file, where known; the message is ``<path>: <problem>`` then.
    """

    def __init__(self, problem: str, path: Path | None = None) -> None:
        super().__init__(f"{path}: {problem}" if path is not None else problem)
        self.problem = problem
        self.path = path


def _value(data: Mapping[str, Any], key: str, kind: type | tuple[type, ...], *,
           where: str = "", required: bool = True, nullable: bool = False) -> Any:
    """``data[key]`` checked against ``kind`` (bool is never an integer); None for an
    absent optional key or an allowed null.

    Raises:
        MetaError: the key is required and absent, or the value has another type.
    """
    name = where + key
    if key not in data:
        if required:
            raise MetaError(f"missing field {name!r}")
        return None
    value = data[key]
    if value is None and nullable:
        return None
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        wanted = " or ".join(_KIND_NAMES.get(k, k.__name__) for k in kinds)
        raise MetaError(f"field {name!r}: expected {wanted}{' or null' * nullable}, "
                        f"got {type(value).__name__}")
    return value


def _names(data: Mapping[str, Any], key: str, *, required: bool = True,
           nullable: bool = True) -> list[str] | None:
    """A list of strings (pass names, signatures, file names), or None where allowed."""
    value = _value(data, key, list, required=required, nullable=nullable)
    if value is None:
        return None
    if not all(isinstance(item, str) for item in value):
        raise MetaError(f"field {key!r}: expected a list of strings")
    return list(value)


def _extra(data: Mapping[str, Any], known: tuple[str, ...] | frozenset[str]) -> dict[str, Any]:
    """The entries of ``data`` whose keys are not ``known``, in their order."""
    return {k: v for k, v in data.items() if k not in known}


@dataclass(kw_only=True)
class TargetInfo:
    """``meta["target"]``: the system under test and its configuration.

    Attributes:
        name: registered target name (``fuzzer.targets``).
        version: the target's version when the bundle was made.
        config: the target configuration, e.g. ``{"passes": [...], "fixed_point": False}``.
        extra: keys of the file's ``target`` object this code does not know, kept verbatim.
    """

    name: str
    version: str
    config: dict[str, Any]
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def passes(self) -> list[str]:
        """The configured pass list (empty for the target's default)."""
        return list(self.config.get("passes") or [])

    @classmethod
    def from_json(cls, data: Any) -> TargetInfo:
        """Parse ``meta["target"]``.

        Raises:
            MetaError: a field is missing or of the wrong type.
        """
        data = _value({"target": data}, "target", dict)
        return cls(name=_value(data, "name", str, where="target."),
                   version=_value(data, "version", str, where="target."),
                   config=_value(data, "config", dict, where="target."),
                   extra=_extra(data, ("name", "version", "config")))

    def to_json(self) -> dict[str, Any]:
        """The JSON object: name, version, config, then the unknown keys."""
        return {"name": self.name, "version": self.version, "config": self.config,
                **self.extra}


@dataclass(kw_only=True)
class NodeCounts:
    """``meta["nodes"]``: node counts of the main graph as first found and minimized.

    Attributes:
        minimal: a reduction ran to its end and no edit kept the finding: the model, even
            where it is the model as found, is already minimal (``"minimal": true``, absent
            otherwise).
        extra: keys of the file's ``nodes`` object this code does not know, kept verbatim.
    """

    original: int
    minimized: int
    minimal: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any) -> NodeCounts:
        """Parse ``meta["nodes"]``.

        Raises:
            MetaError: a count is missing or not an integer.
        """
        data = _value({"nodes": data}, "nodes", dict)
        return cls(original=_value(data, "original", int, where="nodes."),
                   minimized=_value(data, "minimized", int, where="nodes."),
                   minimal=bool(_value(data, "minimal", bool, where="nodes.", required=False)),
                   extra=_extra(data, ("original", "minimized", "minimal")))

    def to_json(self) -> dict[str, Any]:
        """The JSON object: original, minimized, minimal where true, then the unknown
        keys."""
        marked = {"minimal": True} if self.minimal else {}
        return {"original": self.original, "minimized": self.minimized, **marked,
                **self.extra}


@dataclass(kw_only=True)
class BundleMeta:
    """The metadata of one bundle (``crashes/<symptom>-<hash>/meta.json``), schema 2.

    Attributes:
        schema: always :data:`SCHEMA` in memory (a schema-1 file is upgraded on write).
        id: the bundle's folder name, ``<symptom>-<8 hex digits>``.
        signature: the deduplication key (:mod:`fuzzer.findings.signature`).
        symptom, stage, message: what the oracle reported (design.md, "Symptoms").
        target: the target, its version and configuration.
        responsible_passes: localized passes, or None until localization ran.
        source: provenance: ``{"kind": "generated", "seed": ...}`` or
            ``{"kind": "corpus", "model": ..., "sha256": ...}`` plus generator details.
        versions: package versions the finding was made with (onnx, onnxruntime, ...).
        nodes: node counts before and after reduction.
        first_seen, last_seen: ISO 8601 UTC times (``2026-11-21T10:00:00Z``).
        hits: times the bug was seen (>= 1).
        localization: optional ``{"runs": int, "method": str, ...}`` of the localization.
        aliases: optional earlier signatures of this bundle.
        replay: optional record of the last replay (:mod:`fuzzer.triage.replay`).
        breaking_pass: the pass whose removal ends the symptom (schema 2).
        enabling_passes: the rest of the minimal pass subsequence (schema 2).
        root_cause: the root-cause bucket key (schema 2).
        variants: file names under the bundle's ``variants/`` folder (schema 2).
        trigger: one sentence from the trigger probes (schema 2).
        verified: how the finding was confirmed (schema 2; any JSON value, e.g. a sentence).
        symptoms: symptom -> hits of the bundle's fault, over every symptom it showed
            (schema 2; the counts add up to ``hits``); ``symptom`` is the one of the kept
            model.
        exposed_by: the pass that only tripped over the breaking pass's damage (the
            symptom showed in it), where the culprit search found one (schema 2).
        damage: what was already wrong right after the breaking pass, one sentence
            (schema 2).
        state: the maintainer's state of the bundle (reported, fixed, ...), None where
            nobody set one (:mod:`fuzzer.store.bundle_state`).
        upstream: optional list of replays against other builds of the target, one
            ``{"spec", "version", "status", "time", "message", "observed"}`` per spec
            (``optfuzz replay --against``).
        regression: optional result of ``optfuzz bisect`` over the target's releases:
            ``{"last_good", "first_bad", "first_fixed", "newest_checked", "checked",
            "skipped", "time"}``.
        extra: top-level keys this code does not know, kept verbatim.
    """

    id: str
    signature: str
    symptom: str
    stage: str
    message: str
    target: TargetInfo
    responsible_passes: list[str] | None
    source: dict[str, Any]
    versions: dict[str, Any]
    nodes: NodeCounts
    first_seen: str
    last_seen: str
    hits: int
    schema: int = SCHEMA
    localization: dict[str, Any] | None = None
    aliases: list[str] | None = None
    replay: dict[str, Any] | None = None
    breaking_pass: str | None = None
    enabling_passes: list[str] | None = None
    root_cause: str | None = None
    variants: list[str] = field(default_factory=list)
    trigger: str | None = None
    verified: Any = None
    symptoms: dict[str, int] = field(default_factory=dict)
    exposed_by: str | None = None
    damage: str | None = None
    state: BundleState | None = None
    upstream: list[dict[str, Any]] | None = None
    regression: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.symptoms:
            self.symptoms = {self.symptom: self.hits}

    @classmethod
    def from_json(cls, data: Any) -> BundleMeta:
        """Parse the JSON object of a meta.json file (schema 1 or 2).

        Raises:
            MetaError: ``data`` is not an object, its schema is unknown or newer than
                :data:`SCHEMA`, or a field is missing or of the wrong type (the message
                names the field).
        """
        if not isinstance(data, dict):
            raise MetaError(f"not a JSON object ({type(data).__name__})")
        schema = _value(data, "schema", int)
        if not 1 <= schema <= SCHEMA:
            raise MetaError(f"field 'schema': {schema} is not a schema this optfuzz reads "
                            f"(1 to {SCHEMA})")
        strings = {k: _value(data, k, str) for k in ("id", "signature", "symptom", "stage",
                                                     "message", "first_seen", "last_seen")}
        hits = _value(data, "hits", int)
        if hits < 0:
            raise MetaError(f"field 'hits': {hits} is negative")
        return cls(
            **strings,
            target=TargetInfo.from_json(_value(data, "target", dict)),
            responsible_passes=_names(data, "responsible_passes"),
            source=_value(data, "source", dict),
            versions=_value(data, "versions", dict),
            nodes=NodeCounts.from_json(_value(data, "nodes", dict)),
            hits=hits,
            localization=_value(data, "localization", dict, required=False, nullable=True),
            aliases=_names(data, "aliases", required=False),
            replay=_value(data, "replay", dict, required=False, nullable=True),
            breaking_pass=_value(data, "breaking_pass", str, required=False, nullable=True),
            enabling_passes=_names(data, "enabling_passes", required=False),
            root_cause=_value(data, "root_cause", str, required=False, nullable=True),
            variants=_names(data, "variants", required=False) or [],
            trigger=_value(data, "trigger", str, required=False, nullable=True),
            verified=data.get("verified"),
            symptoms=_symptom_hits(data),
            exposed_by=_value(data, "exposed_by", str, required=False, nullable=True),
            damage=_value(data, "damage", str, required=False, nullable=True),
            state=_state(data),
            upstream=_value(data, "upstream", list, required=False, nullable=True),
            regression=_value(data, "regression", dict, required=False, nullable=True),
            extra=_extra(data, KNOWN_FIELDS),
        )

    def to_json(self) -> dict[str, Any]:
        """The JSON object to write (a deep copy): schema-1 fields in their order (the
        optional ones only when set), the schema-2 fields, the upstream fields where set,
        then :attr:`extra`."""
        out: dict[str, Any] = {}
        for key in SCHEMA1_REQUIRED:
            value = getattr(self, key)
            out[key] = value.to_json() if key in ("target", "nodes") else value
        for key in SCHEMA1_OPTIONAL:
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        for key in SCHEMA2_FIELDS:
            out[key] = getattr(self, key)
        if self.state is not None:
            out["state"] = self.state.to_json()
        out.update({k: getattr(self, k) for k in UPSTREAM_FIELDS if getattr(self, k) is not None})
        out.update(self.extra)
        return copy.deepcopy(out)

    @property
    def localized(self) -> bool:
        """Whether localization ran (``responsible_passes`` is a list, possibly empty)."""
        return self.responsible_passes is not None

    def passes_shown(self) -> list[str]:
        """The passes to name for this bundle: the responsible passes where localized and
        non-empty, else the configured pass list (empty: the target's default)."""
        return list(self.responsible_passes or self.target.passes)

    def involves(self, pass_name: str) -> bool:
        """Whether ``pass_name`` is among the responsible or the configured passes."""
        return pass_name in set(self.responsible_passes or []) | set(self.target.passes)

    def found_versions(self) -> dict[str, Any]:
        """``{"target": "<name> <version>", **versions}``: the versions the bundle was found
        with, in the layout of :func:`fuzzer.triage.versions.installed_versions`."""
        return {"target": f"{self.target.name} {self.target.version}", **self.versions}

    def add_preliminary_key(self, key: str) -> None:
        """Record that preliminary root-cause ``key`` led here (:data:`PRELIMINARY_KEYS`;
        at most :data:`MAX_PRELIMINARY_KEYS`, none that is the root cause itself)."""
        keys = list(self.extra.get(PRELIMINARY_KEYS) or [])
        if key != self.root_cause and key not in keys and len(keys) < MAX_PRELIMINARY_KEYS:
            self.extra[PRELIMINARY_KEYS] = [*keys, key]

    def add_hits(self, count: int, when: str, symptom: str | None = None) -> None:
        """Count ``count`` more sightings, shown as ``symptom`` (None: the bundle's own);
        ``last_seen`` becomes ``when`` (ISO UTC time) where that is later."""
        self.hits += count
        name = symptom or self.symptom
        self.symptoms[name] = self.symptoms.get(name, 0) + count
        self.last_seen = max(self.last_seen, when)

    def worst_symptom(self) -> str:
        """The most severe symptom the bundle's fault showed (its severity; registry
        order, :func:`oracles.symptom_names`), the bundle's own where none is known."""
        from oracles import symptom_names

        order = {name: rank for rank, name in enumerate(symptom_names())}
        return min(self.symptoms or {self.symptom: 1},
                   key=lambda name: (order.get(name, len(order)), name != self.symptom))

    def resign(self, signature: str) -> None:
        """Record a new signature (after localization); the old one moves to ``aliases``
        so that later sightings under it still find this bundle."""
        old = self.signature
        if not old or old == signature:
            return
        aliases = [a for a in self.aliases or [] if a != signature]
        self.aliases = [*aliases, old] if old not in aliases else aliases
        self.signature = signature


def _symptom_hits(data: Mapping[str, Any]) -> dict[str, int]:
    """The ``symptoms`` field of a meta.json object: symptom -> hits; ``{}`` where absent
    (then :class:`BundleMeta` counts every hit as its own symptom's).

    Raises:
        MetaError: it is not an object of non-negative integers.
    """
    found = _value(data, "symptoms", dict, required=False, nullable=True) or {}
    for name, hits in found.items():
        if not isinstance(hits, int) or isinstance(hits, bool) or hits < 0:
            raise MetaError(f"field 'symptoms': {name!r} has {hits!r}, not a count of hits")
    return dict(found)


def _state(data: Mapping[str, Any]) -> BundleState | None:
    """The ``state`` field of a meta.json object, None where absent or null.

    Raises:
        MetaError: it is not a valid state record (:meth:`BundleState.from_json`).
    """
    found = _value(data, "state", dict, required=False, nullable=True)
    try:
        return BundleState.from_json(found) if found is not None else None
    except ValueError as exc:
        raise MetaError(f"field 'state': {exc}") from None


def parse_meta(data: bytes | str) -> BundleMeta:
    """The BundleMeta of the text of a meta.json file.

    Raises:
        MetaError: the text is empty (a half-written file), not UTF-8, not JSON, or not a
            valid meta (see :meth:`BundleMeta.from_json`).
    """
    if isinstance(data, bytes):
        try:
            data = data.decode()
        except UnicodeDecodeError as exc:
            raise MetaError(f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    if not data.strip():
        raise MetaError("empty file")
    try:
        parsed = json.loads(data)
    except json.JSONDecodeError as exc:
        raise MetaError(f"not JSON ({exc.msg}: line {exc.lineno} column {exc.colno}; "
                        "truncated?)") from None
    except RecursionError:
        raise MetaError("not a meta (JSON nested too deeply)") from None
    return BundleMeta.from_json(parsed)


def meta_problem(exc: Exception) -> str:
    """One line saying why a meta.json could not be read (from the :class:`MetaError` or
    OSError that :func:`read_meta` raised), without its path: ``no meta.json``,
    ``meta.json: unreadable (...)`` or ``meta.json: <problem>``."""
    if isinstance(exc, MetaError):
        return f"{META_FILE}: {exc.problem}"
    if isinstance(exc, FileNotFoundError):
        return f"no {META_FILE}"
    if isinstance(exc, OSError):
        return f"{META_FILE}: unreadable ({exc.strerror or exc})"
    return " ".join(str(exc).split())


def read_meta(path: str | Path) -> BundleMeta:
    """The BundleMeta of the meta.json file at ``path``.

    Raises:
        OSError: the file is missing or unreadable.
        MetaError: its content is not a valid meta; the message starts with ``path``.
    """
    path = Path(path)
    try:
        return parse_meta(path.read_bytes())
    except MetaError as exc:
        raise MetaError(exc.problem, path) from None
