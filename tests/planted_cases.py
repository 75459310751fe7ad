"""Planted models of a target, one folder per symptom under ``tests/data/<target>/``: the
minimized model.onnx and inputs.npz of a bundle a campaign found, and case.json (the
configuration it ran, the symptom and message, the responsible passes localization
found, the breaking pass or the target's shared cause, the version it was found with and
the bundle it came from). A test module gives its target's folder to :func:`cases` and runs
:func:`check_detected_and_localized` and :func:`check_repro_exits_1` on each with the
conftest's ``sandbox``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fuzzer.execution.case import TestCase
from fuzzer.findings.rootcause import fault_kind
from fuzzer.handling.key import key_of
from fuzzer.localize.search import localize
from fuzzer.store.npz import read_npz
from fuzzer.targets import get_target


def cases(folder: Path) -> list[str]:
    """The planted case folders under ``folder`` (those with a case.json)."""
    return sorted(p.name for p in folder.iterdir() if (p / "case.json").is_file()) \
        if folder.is_dir() else []


def planted(folder: Path) -> tuple[dict[str, Any], TestCase]:
    """case.json of ``folder`` and the TestCase of its model, feeds and configuration."""
    info = json.loads((folder / "case.json").read_text())
    case = TestCase(info["target"], info["config"], {"kind": "bytes"},
                    model_bytes=(folder / "model.onnx").read_bytes(),
                    feeds=read_npz(folder / "inputs.npz"), keep=True)
    return info, case


def check_detected_and_localized(folder: Path, sandbox: Any) -> None:
    """The campaign's oracles show the planted symptom with the configuration it was found
    with; localization finds the responsible passes; the root-cause key names the breaking
    pass (or the shared cause). A newer target version that no longer shows it skips."""
    info, case = planted(folder)
    target = get_target(info["target"])
    result = sandbox.run(case)
    shown = [f for f in result.findings if f.symptom == info["symptom"]
             and target.documented(f, case.config) is None]
    if not shown and target.version() != info["version"]:
        pytest.skip(f"{info['target']} {target.version()} no longer shows it (found with "
                    f"{info['version']}: {info['message'][:80]})")
    assert shown, f"{info['symptom']} not detected: {result.findings or result.unusable}"
    finding = shown[0]
    where = localize(sandbox, case, result, finding)
    assert where.passes is not None
    assert set(where.passes) == set(info["responsible_passes"])
    minimal = case.with_config(target.with_passes(case.config, where.passes))
    key, breaking, _ = key_of(sandbox, case, finding, where.passes, sandbox.run(minimal))
    assert key.split("|")[2] == fault_kind(finding)  # the kind of fault, never the symptom
    if "shared_cause" in info:
        assert key.split("|")[1] == f"({info['shared_cause']})"
    else:
        assert breaking == info["breaking_pass"]


def check_repro_exits_1(folder: Path, sandbox: Any) -> None:
    """The bundle's own repro.py, with the responsible passes, exits 1 in a fresh process."""
    from fuzzer.handling.verify import run_repro
    from fuzzer.report.repro import render_repro

    info, case = planted(folder)
    target = get_target(info["target"])
    if target.version() != info["version"]:
        pytest.skip(f"found with {info['target']} {info['version']}")
    config = target.with_passes(case.config, info["responsible_passes"])
    repro = render_repro(f"{info['symptom']}-planted", info["symptom"], info["target"],
                         config, info["version"], timeout=30)
    files = {"repro.py": repro.encode(), "model.onnx": (folder / "model.onnx").read_bytes(),
             "inputs.npz": (folder / "inputs.npz").read_bytes()}
    code, tail = sandbox.call(run_repro, files, 120.0, timeout=180)
    assert code == 1, tail


def check_portability_note(folder: Path, sandbox: Any) -> None:
    """A planted load failure that is a portability note (portability.json beside the
    model): a valid optimized model onnxruntime cannot load for lack of a kernel or a rule
    of its own is counted as ``onnxruntime-lacks-a-kernel``, never bundled. A newer target
    version that no longer makes the model skips."""
    info = json.loads((folder / "portability.json").read_text())
    target = get_target(info["target"])
    case = TestCase(info["target"], info["config"], {"kind": "bytes"},
                    model_bytes=(folder / "model.onnx").read_bytes(),
                    feeds=read_npz(folder / "inputs.npz"), keep=True)
    shown = [f for f in sandbox.run(case).findings if f.symptom == info["symptom"]]
    if not shown and target.version() != info["version"]:
        pytest.skip(f"{info['target']} {target.version()} no longer makes the model")
    assert shown, info["symptom"]
    documented = target.documented(shown[0], case.config)
    assert documented is not None and documented.name == "onnxruntime-lacks-a-kernel"
