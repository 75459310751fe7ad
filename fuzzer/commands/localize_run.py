"""The work behind ``optfuzz localize``: load a bundle or a model, reproduce, localize, and
update the bundle's meta.json (see :mod:`fuzzer.commands.localize` for the id policy)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fuzzer.commands.options import InputArgs, TargetArgs
from fuzzer.errors import InputError
from fuzzer.store.meta import BundleMeta


@dataclass
class Subject:
    """What to localize: a test case, and the bundle it came from (None for a model file).

    Attributes:
        case: the :class:`fuzzer.execution.case.TestCase` to reproduce.
        bundle: the bundle folder, or None.
        meta: the bundle's meta, or None.
    """

    case: Any
    bundle: Path | None = None
    meta: BundleMeta | None = None


def load_subject(path: Path, target: TargetArgs, inputs: InputArgs) -> Subject:
    """The case of a bundle folder or of an .onnx file.

    Raises:
        InputError: missing path, a folder without a readable meta.json, an unreadable
            model or feeds, an unknown target or pass.
    """

    from fuzzer.execution.case import TestCase
    from fuzzer.modelio.load import load_model, parse_model
    from fuzzer.store.case import bundle_case
    from fuzzer.store.meta import meta_problem, read_meta

    if path.is_dir():
        try:
            meta = read_meta(path / "meta.json")
        except (OSError, ValueError) as exc:
            raise InputError(f"{path}: not a bundle ({meta_problem(exc)})") from None
        adapter, config = TargetArgs(target.target or meta.target.name, target.passes,
                                     target.fixed_point).resolve(meta.target.config or None)
        try:
            case = bundle_case(path, meta, config)
            parse_model(case.model_bytes)
        except (OSError, ValueError) as exc:
            raise InputError(f"{path}: cannot read the bundle's model or inputs ({exc})") \
                from None
        case.target = adapter.name
        return Subject(case, path, meta)
    if not path.is_file():
        raise InputError(f"{path}: no such bundle folder or model file")
    adapter, config = target.resolve()
    model = load_model(path)
    case = TestCase(adapter.name, config, {"kind": "file", "path": str(path.resolve())},
                    model_bytes=model.SerializeToString(), input_seed=inputs.seed,
                    input_shapes=inputs.shapes())
    return Subject(case)


def _pick(result: Any, meta: BundleMeta | None) -> Any:
    """The finding to localize: the bundle's own (same symptom and normalized message), or
    the primary finding for a model file; None when it does not reproduce."""
    from fuzzer.findings.signature import normalize_message, same_finding

    if meta is None:
        return result.findings[0] if result.findings else None
    wanted = normalize_message(meta.message)
    for finding in result.findings:
        if same_finding(finding, meta.symptom, wanted):
            return finding
    return None


def run_localization(subject: Subject, sandbox: Any) -> int:
    """Reproduce, localize (runs in ``sandbox``, a :class:`fuzzer.execution.sandbox.Sandbox`),
    print, and update the bundle; return the exit status (0 localized, 1 not reproduced or
    not localized).

    Raises:
        InputError: the original model is unusable (fails in the reference run).
    """
    from rich.console import Console

    from fuzzer.findings.dedup import finding_signature
    from fuzzer.localize.search import localize

    console = Console(highlight=False)
    case = subject.case
    result = sandbox.run(case)
    if result.unusable:
        raise InputError(f"the original model is unusable ({result.unusable})")
    finding = _pick(result, subject.meta)
    if finding is None:
        got = "; ".join(f"{f.symptom}: {f.message}" for f in result.findings) or "clean"
        console.print(f"not reproduced with {len(case.config.get('passes') or [])} "
                      f"passes ({got})")
        return 1
    where = localize(sandbox, case, result, finding)
    where.runs += 1  # the reproduction run
    console.print(f"[red]{finding.symptom}[/red]: {finding.message}")
    if where.passes is None:
        console.print(f"not localized ({where.runs} optimizer runs)")
    else:
        needs = " (needs fixed_point)" if where.fixed_point else ""
        console.print(f"responsible passes: {', '.join(where.passes) or '(none: empty list)'}"
                      f"{needs} — {where.runs} optimizer runs, {where.method}")
    if subject.bundle is not None:
        signature = finding_signature(case, result, finding, where and where.passes,
                                  where and where.result)
        _update_bundle(subject.bundle, where, signature)
        console.print(f"updated {subject.bundle / 'meta.json'}")
    return 0 if where.passes is not None else 1


def _update_bundle(folder: Path, where: Any, signature: str) -> None:
    """Record localization and the (possibly new) signature in the bundle's meta.json, under
    the store's lock; the folder and id stay."""
    from fuzzer.store.folder import BundleStore

    def change(meta: BundleMeta) -> None:
        meta.responsible_passes = where.passes
        meta.localization = where.to_json()
        meta.resign(signature)

    try:
        BundleStore(folder.parent).update(folder.name, change)
    except (OSError, ValueError) as exc:  # the meta.json was damaged meanwhile
        raise InputError(f"{folder}: meta.json not updated ({exc})") from None
