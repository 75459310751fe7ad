"""The settings of a campaign, as ``optfuzz fuzz`` was asked for them, and the record of them
that ``campaign.json`` keeps, so that ``--resume`` continues the same campaign and nothing else.

Settings come in three kinds:

- identity (target, passes, fixed passes, seed, sources, generator, input shapes, tolerances):
  they decide which cases a campaign runs and how it judges them; they never change within a
  campaign;
- operational (timeout, memory limit, reduce seconds, localize, avoid known): they may change
  on resume with
  ``--allow-change NAME``;
- per run (time and case limits, jobs, the live display): never recorded, never compared.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fuzzer.errors import InputError
from fuzzer.execution.sandbox import DEFAULT_MEMORY_LIMIT, DEFAULT_TIMEOUT
from fuzzer.handling.outcome import FindingPolicy
from fuzzer.targets.base import DEFAULT_TARGET

#: record key -> the name a person uses for it (in messages and ``--allow-change``).
IDENTITY: dict[str, str] = {
    "target": "target", "passes": "passes", "fixed_passes": "fixed-passes", "seed": "seed",
    "generated": "sources", "mutated": "sources", "corpus": "sources", "corpus_dirs": "sources",
    "corpus_models": "sources", "generator": "generator", "input_shapes": "input-shapes",
    "tolerances": "tolerances", "guided": "guided", "build": "build",
}
OPERATIONAL: dict[str, str] = {
    "timeout": "timeout", "memory_limit": "memory-limit", "reduce_seconds": "reduce-seconds",
    "localize": "localize", "avoid_known": "avoid-known",
}
_LABELS = {"generated": "generated source", "mutated": "mutated source",
           "corpus": "corpus sources",
           "corpus_dirs": "--corpus folders", "corpus_models": "corpus models"}


@dataclass
class CampaignSettings:
    """Everything ``optfuzz fuzz`` was asked for.

    Attributes:
        out: the campaign's folder.
        seconds: duration limit of this run in seconds (None: no limit).
        max_cases: case limit of this run (None: no limit).
        jobs: worker processes.
        corpus: corpus models (``fuzzer.corpus.CorpusModel``).
        corpus_kinds: the corpus source kinds asked for (``bundled``, ``dir``, ...).
        corpus_dirs: the ``--corpus`` folders.
        timeout: per-case timeout in seconds.
        memory_limit: per-worker address-space limit in bytes (None: no limit).
        resume: continue the campaign saved in ``out``.
        allow_change: operational settings (record keys) that may differ from the saved ones
            on resume.
        guided: steer cases by the target's own code coverage (:mod:`fuzzer.campaign.guided`):
            half of the workers (at least one) run its coverage build.
        ray: run on Ray (:mod:`fuzzer.cluster`): ``""`` starts a local Ray instance,
            ``"auto"`` or ``"ray://host:port"`` joins a cluster; None runs locally. With Ray,
            ``jobs`` caps the case actors (0: one per CPU the cluster offers).
        build: ``"sanitize"`` runs every case, localization and reduction on the target's
            sanitize build under the sanitizer runtime (:mod:`fuzzer.builds.sanitizer`);
            None runs the target as installed.
        crash_states: run each new native crash once more on the target's sanitize build
            for its crash state (:mod:`fuzzer.handling.crash_state`); None: where a sanitize
            build of a native target is there, unless ``build`` is already ``sanitize``.
        avoid_known: leave out of generated cases the features that a frequent known fault
            absorbs (:mod:`fuzzer.campaign.avoidance`).
    """

    out: Path
    target: str = DEFAULT_TARGET
    seconds: float | None = None
    max_cases: int | None = None
    jobs: int = 2
    seed: int = 0
    generated: bool = True
    mutated: bool = False
    generator: str = "v2"
    corpus: list[Any] = field(default_factory=list)
    corpus_kinds: list[str] = field(default_factory=list)
    corpus_dirs: list[Path] = field(default_factory=list)
    passes: list[str] | None = None
    fixed_passes: bool = False
    input_shapes: dict[str, list[int]] | None = None
    timeout: float = DEFAULT_TIMEOUT
    memory_limit: int | None = DEFAULT_MEMORY_LIMIT
    policy: FindingPolicy = field(default_factory=FindingPolicy)
    resume: bool = False
    live: bool = True
    allow_change: frozenset[str] = frozenset()
    guided: bool = False
    ray: str | None = None
    build: str | None = None
    crash_states: bool | None = None
    avoid_known: bool = True

    def record(self) -> dict[str, Any]:
        """The identity and operational settings as campaign.json keeps them (JSON types)."""
        record = {
            "target": self.target, "passes": self.passes, "fixed_passes": self.fixed_passes,
            "seed": self.seed, "generated": self.generated, "mutated": self.mutated,
            "corpus": list(self.corpus_kinds),
            "corpus_dirs": [str(Path(d).resolve()) for d in self.corpus_dirs],
            "corpus_models": sorted(str(getattr(m, "id", m)) for m in self.corpus),
            "generator": self.generator, "input_shapes": self.input_shapes,
            "tolerances": tolerances(), "timeout": self.timeout,
            "memory_limit": self.memory_limit, "reduce_seconds": self.policy.reduce_seconds,
            "localize": self.policy.localize, "guided": self.guided, "build": self.build,
            "avoid_known": self.avoid_known,
        }
        return json.loads(json.dumps(record))


def tolerances() -> dict[str, list[float]]:
    """The output comparison's (rtol, atol) per dtype name, and under ``default`` the rest."""
    from oracles.tolerance import DEFAULT_TOLERANCE, TOLERANCES

    table = {str(dtype): list(pair) for dtype, pair in TOLERANCES.items()}
    table["default"] = list(DEFAULT_TOLERANCE)
    return table


def parse_allow_change(text: str | None) -> frozenset[str]:
    """``"timeout,reduce-seconds"`` -> the record keys ``{"timeout", "reduce_seconds"}``.

    Raises:
        InputError: an identity setting (it never changes within a campaign) or an unknown
            name.
    """
    names = [t.strip().replace("_", "-") for t in (text or "").split(",") if t.strip()]
    keys = {name: key for key, name in OPERATIONAL.items()}
    identity = sorted({n for n in names if n in IDENTITY.values()})
    if identity:
        raise InputError(f"--allow-change {','.join(identity)}: the campaign's identity "
                         "(target, passes, fixed-passes, seed, sources, generator, "
                         "input-shapes, tolerances) never changes; start a new --out")
    unknown = [n for n in names if n not in keys]
    if unknown:
        raise InputError(f"--allow-change {','.join(unknown)}: unknown setting; one of "
                         f"{', '.join(OPERATIONAL.values())}")
    return frozenset(keys[n] for n in names)


def saved_settings(campaign: dict[str, Any]) -> dict[str, Any]:
    """The settings record of a parsed campaign.json; for one written before campaign.json held
    settings, the two it always held (target and seed)."""
    if isinstance(campaign.get("settings"), dict):
        return campaign["settings"]
    return {key: campaign[key] for key in ("target", "seed") if key in campaign}


def check_settings(folder: Path, saved: dict[str, Any], current: dict[str, Any],
                   allowed: frozenset[str]) -> list[str]:
    """Compare the saved settings record of the campaign in ``folder`` with the current one.

    Only keys present in ``saved`` are compared (an older campaign.json records fewer).
    Returns the descriptions of the allowed changes (``"timeout 30 -> 5"``).

    Raises:
        InputError: a setting differs that is not in ``allowed``; the one-line message names
            every such difference.
    """
    changes = [(key, describe(key, saved[key], current.get(key)))
               for key in saved if key in current and saved[key] != current[key]]
    refused = [(key, text) for key, text in changes if key not in allowed]
    if not refused:
        return [text for _, text in changes]
    where = str(folder).rstrip("/") + "/"
    hint = "start a new --out"
    if not any(key in IDENTITY for key, _ in refused):
        names = dict.fromkeys(OPERATIONAL[key] for key, _ in refused)
        hint += f" or pass --allow-change {','.join(names)}"
    raise InputError(f"{where} holds a campaign with other settings: "
                     f"{', '.join(text for _, text in refused)}; {hint}")


def describe(key: str, old: Any, new: Any) -> str:
    """One difference in a few words: ``"seed 0 -> 3"``, ``"corpus models: 2 added"``."""
    label = _LABELS.get(key) or IDENTITY.get(key) or OPERATIONAL.get(key, key)
    if key == "corpus_models" and isinstance(old, list) and isinstance(new, list):
        added, removed = len(set(new) - set(old)), len(set(old) - set(new))
        parts = [f"{added} added"] * bool(added) + [f"{removed} removed"] * bool(removed)
        return f"{label}: {', '.join(parts) or 'reordered'}"
    if isinstance(old, dict) and isinstance(new, dict):
        keys = [k for k in dict.fromkeys([*old, *new]) if old.get(k) != new.get(k)]
        return ", ".join(f"{label} {k} {_show(old.get(k))} -> {_show(new.get(k))}"
                         for k in keys)
    if key == "memory_limit":
        return f"{label} {_gib(old)} -> {_gib(new)}"
    return f"{label} {_show(old)} -> {_show(new)}"


def _show(value: Any, width: int = 60) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, list):
        text = "[" + ", ".join(_show(v) for v in value) + "]"
        return text if len(text) <= width else text[:width - 8] + f"... ({len(value)})]"
    return str(value)


def _gib(value: Any) -> str:
    return "none" if not value else f"{value / (1 << 30):g} GiB"
