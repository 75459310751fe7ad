"""The stream of test cases a campaign runs: generated graphs, corpus models and mutations of
either, each with a target configuration, deterministic from the campaign seed and the case
index."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from fuzzer.execution.case import TestCase
from fuzzer.targets import Target


def case_seed(campaign_seed: int, index: int) -> int:
    """A 63-bit seed for case ``index`` of a campaign (sha256-derived, so neighbouring
    indices give unrelated seeds)."""
    digest = hashlib.sha256(f"{campaign_seed}:{index}".encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


@dataclass
class StreamConfig:
    """What a stream draws from.

    Attributes:
        target_name: registry name of the target.
        seed: campaign seed.
        generated: whether generated graphs are drawn.
        generator: generator name (``generators`` registry), e.g. ``"v2"``.
        corpus: corpus models ``fuzzer.corpus.CorpusModel`` (each run with the default list
            and each single pass).
        passes: the pass pool (None: the target's own).
        input_shapes: sizes for dynamic dims, applied to every case.
        fixed_passes: run exactly one configuration for every case: ``passes`` in order (the
            target's default list when None), without fixed_point; corpus models too.
        mutated: draw mutated cases (:mod:`generators.mutate`): half of the drawn cases where
            ``generated`` is also on, else all; a quarter of them mutate a corpus model.
        parents: corpus models a mutated case may start from (None: ``corpus``, or the
            models bundled in the onnx wheel where ``corpus`` is empty).
    """

    target_name: str
    seed: int
    generated: bool = True
    generator: str = "v2"
    corpus: list[Any] = field(default_factory=list)
    passes: list[str] | None = None
    input_shapes: dict[str, list[int]] | None = None
    fixed_passes: bool = False
    mutated: bool = False
    parents: list[Any] | None = None


#: One mutated case in this many mutates a corpus model (where there are any).
CORPUS_PARENT_ONE_IN = 4
#: One generated case in this many (mutated ones never) asks its worker for the scaling
#: probe of the ``slow`` oracle (:mod:`fuzzer.execution.scaling`): a model with a run of
#: repeated blocks (:data:`GROWTH_MOTIF`) timed scaled up to :data:`GROWTH_NODES` nodes,
#: 0.1 s of a worker's time where nothing grows, 3 to 17 s where a pass is slow.
GROWTH_ONE_IN = 20000
#: main-graph nodes the sizes of an asked probe may reach.
GROWTH_NODES = 8192
#: the motif a case that asks for the probe is generated with (:mod:`generators.motifs.runs`).
GROWTH_MOTIF = "block-run"


class CaseStream:
    """Yields TestCases from case ``start`` and corpus case ``corpus_start`` on.

    :meth:`draw` takes a corpus case only when the caller allows it (a campaign keeps large,
    slow corpus models from occupying every worker); otherwise, and once the corpus is
    exhausted, a generated case. :meth:`skip_model` drops a corpus model that proved unusable
    (its remaining configurations are not run).
    """

    def __init__(self, config: StreamConfig, target: Target, start: int = 0,
                 corpus_start: int = 0) -> None:
        self.config, self.target, self.index = config, target, start
        self.corpus_drawn = corpus_start
        self._rng = random.Random(config.seed * 7919 + start)
        self._skipped: set[str] = set()
        self._corpus = self._corpus_cases(corpus_start if config.corpus else 0)
        self._corpus_left = bool(config.corpus)

    def skip_model(self, model_id: str) -> None:
        """Run no more cases of corpus model ``model_id``."""
        self._skipped.add(model_id)

    def _corpus_configs(self) -> list[dict[str, Any]]:
        default = self.target.default_config()
        if self.config.passes:
            default = dict(default, passes=list(self.config.passes))
        if self.config.fixed_passes:
            return [default]
        singles = self.config.passes or default.get("passes") or []
        return [default] + [dict(default, passes=[p]) for p in singles]

    def _corpus_cases(self, already_drawn: int) -> Iterator[TestCase]:
        """Each corpus model with each configuration, after the first ``already_drawn``
        (those a resumed campaign ran before)."""
        position = 0
        for config in self._corpus_configs():
            for model in self.config.corpus:
                position += 1
                if position <= already_drawn or model.id in self._skipped:
                    continue
                yield TestCase(self.config.target_name, config, model.source(),
                               input_seed=self.config.seed, task=model.task,
                               input_shapes=self.config.input_shapes)

    def corpus_positions(self) -> int:
        """Corpus cases in all: every corpus model with every configuration."""
        return len(self._corpus_configs()) * len(self.config.corpus)

    def corpus_range(self, start: int, count: int) -> list[TestCase]:
        """The corpus cases at positions ``[start, start + count)`` of the corpus list (the
        order :meth:`draw` takes them in), without the models :meth:`skip_model` dropped."""
        configs, models = self._corpus_configs(), self.config.corpus
        cases = []
        for position in range(start, min(start + count, len(configs) * len(models))):
            model = models[position % len(models)]
            if model.id not in self._skipped:
                cases.append(TestCase(self.config.target_name, configs[position // len(models)],
                                      model.source(), input_seed=self.config.seed,
                                      task=model.task, input_shapes=self.config.input_shapes))
        return cases

    def _fixed_config(self) -> dict[str, Any]:
        config = self.target.default_config()
        if self.config.passes:
            config["passes"] = list(self.config.passes)
        return config

    def __iter__(self) -> Iterator[TestCase]:
        return self

    def __next__(self) -> TestCase:
        return self.draw(corpus_ok=True)

    def draw(self, corpus_ok: bool) -> TestCase:
        """The next case: a corpus case if ``corpus_ok`` (or no generated or mutated source)
        and the corpus has one left, else a generated or mutated case.

        Raises:
            StopIteration: no generated or mutated source and the corpus is exhausted.
        """
        if self._corpus_left and (corpus_ok or not (self.config.generated or
                                                    self.config.mutated)):
            case = next(self._corpus, None)
            if case is not None:
                self.index += 1
                self.corpus_drawn += 1
                return case
            self._corpus_left = False
        if not self.config.generated and not self.config.mutated:
            raise StopIteration
        index = self.index
        self.index += 1
        seed = case_seed(self.config.seed, index)
        config = self._fixed_config() if self.config.fixed_passes else \
            self.target.configurations(self._rng, self.config.passes)
        source = {"kind": "generated", "seed": seed, "generator": self.config.generator,
                  **self.target.generation_hints(config).as_source()}
        task = None
        if self.config.mutated and (not self.config.generated or seed % 2):
            source, task = self._mutated(source, seed)
        growth = source["kind"] == "generated" and (seed >> 32) % GROWTH_ONE_IN == 0
        if growth:
            source["with_motifs"] = [GROWTH_MOTIF]
        return TestCase(self.config.target_name, config, source, input_seed=seed,
                        input_shapes=self.config.input_shapes, task=task, growth=growth,
                        growth_nodes=GROWTH_NODES if growth else None)

    def _mutated(self, generated: dict[str, Any], seed: int) -> tuple[dict[str, Any],
                                                                        str | None]:
        """The source of a mutated case (and its parent's task): a mutation, seeded by
        ``seed``, of the generated model ``generated`` or of a corpus model."""
        if self.config.parents is None:
            self.config.parents = self.config.corpus or _bundled()
        parents = self.config.parents
        if parents and (seed >> 8) % CORPUS_PARENT_ONE_IN == 0:
            model = parents[(seed >> 16) % len(parents)]
            return {"kind": "mutated", "seed": seed, "parent": model.source()}, model.task
        return {"kind": "mutated", "seed": seed, "parent": generated}, None


def _bundled() -> list[Any]:
    """The models bundled in the onnx wheel (none where the corpus cannot be listed)."""
    try:
        from fuzzer.corpus import iter_models

        return list(iter_models(["bundled"]))
    except Exception:
        return []
