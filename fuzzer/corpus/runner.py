"""Run corpus models through a target in the sandbox: each model with the default pass list and
with every single pass (DiTOX's protocol), collecting a :class:`ModelRecord` per model."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from fuzzer.corpus.model import CorpusModel
from fuzzer.corpus.report import ModelRecord
from fuzzer.targets import Target

#: Progress callback: ``(cases done, cases total)``.
Progress = Callable[[int, int], None]


def configurations(target: Target, single: bool = True, default: bool = True,
                   interface_passes: bool = False) -> list[tuple[str, dict[str, Any]]]:
    """``(label, config)`` pairs: the default configuration (label ``default``) and each
    available pass alone (label = the pass name), all without fixed point.

    A pass that renames, retypes or cuts the graph interface by design (the target's
    ``oracle_context`` says ``interface_may_change``) makes the original's feeds and outputs
    inapplicable, so it runs alone only with ``interface_passes``."""
    configs: list[tuple[str, dict[str, Any]]] = []
    base = dict(target.default_config(), fixed_point=False)
    if default:
        configs.append(("default", base))
    if single:
        for name in target.available_passes():
            config = target.with_passes(base, [name])
            if interface_passes or not target.oracle_context(config).get(
                    "interface_may_change", False):
                configs.append((name, config))
    return configs


def run_corpus(models: Sequence[CorpusModel], target_name: str,
               configs: Sequence[tuple[str, dict[str, Any]]], jobs: int = 2,
               timeout: float = 60.0, seed: int = 0,
               progress: Progress | None = None) -> list[ModelRecord]:
    """Run every model with every configuration in a :class:`fuzzer.execution.sandbox.Sandbox`.

    A model whose first case finds it unusable (the original fails to load or run) is recorded
    once with the reason; its remaining cases are not submitted. Returns one record per model,
    in the order of ``models``. ``timeout`` is per case, in seconds.
    """
    from fuzzer.execution.case import TestCase
    from fuzzer.execution.sandbox import Sandbox

    records = [ModelRecord(m.id, m.task, m.origin) for m in models]
    total = len(models) * len(configs)
    done = 0
    with Sandbox(jobs=jobs, timeout=timeout) as sandbox:
        # probe each model with its first configuration, then fan out the usable ones
        def case(model: CorpusModel, config: dict[str, Any]) -> Any:
            return TestCase(target=target_name, config=config, source=model.source(),
                            input_seed=seed, task=model.task)

        label, config = configs[0]
        pending = [(index, label, sandbox.submit(case(model, config)))
                   for index, model in enumerate(models)]
        rest = []
        for index, label, future in pending:
            rec = records[index]
            _record(rec, label, future.result())
            done += 1
            if rec.unusable:
                done += len(configs) - 1
            else:
                rest.extend((index, lbl, sandbox.submit(case(models[index], cfg)))
                            for lbl, cfg in configs[1:])
            if progress:
                progress(done, total)
        for index, label, future in rest:
            _record(records[index], label, future.result())
            done += 1
            if progress:
                progress(done, total)
    return records


def _record(rec: ModelRecord, label: str, result: Any) -> None:
    rec.cases += 1
    rec.seconds += sum(result.timings.values())
    if result.unusable:
        rec.unusable = rec.unusable or result.unusable
        return
    rec.findings.extend((label, f.symptom, f.message) for f in result.findings)
