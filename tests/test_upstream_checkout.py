"""``optfuzz replay --against CHECKOUT``: a source checkout that a maintainer patched is
built once per state of its files (uncommitted changes included) by the project's offline
build (:func:`fuzzer.builds.checkout_builder`), and exactly the bundles of the fault the
patch fixes turn fixed. The fake target's checkout stands in for onnxoptimizer's, whose
build is a C++ compile of several minutes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fuzzer.builds import checkout_builder
from fuzzer.targets.fake import FakeTarget
from fuzzer.upstream.spec import parse_spec
from tests.fake_checkout import PROJECT, fake_checkout, fix
from tests.fake_releases import fake_bundle
from tests.test_upstream_builds import DROP, RAISE, optfuzz


@pytest.fixture
def own_build(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(FakeTarget, "build_module", "tests.fake_checkout")


def test_a_patched_checkout_turns_exactly_the_bundles_of_its_fault_fixed(
        own_build: None, tmp_path: Path) -> None:
    root = tmp_path / "crashes"
    fake_bundle(root, DROP, "drop-node")
    fake_bundle(root, RAISE, "raise")
    checkout = fake_checkout(tmp_path / "optimizer")
    envs = tmp_path / "envs"
    common = ["--against", str(checkout), "--env-cache", str(envs)]

    code, out = optfuzz("replay", str(root), *common)
    assert code == 1 and "2 bundle(s) against 1 build(s): 2 still fails" in out, out

    fix(checkout, "drop-node")
    code, out = optfuzz("replay", str(root), *common)
    lines = out.splitlines()
    assert code == 1, out
    assert any(DROP in ln and "(1.1.dev0) fixed" in ln for ln in lines), out
    assert any(RAISE in ln and "still fails" in ln for ln in lines), out
    assert len([p for p in envs.iterdir() if not p.name.startswith(".")]) == 2
    record = json.loads((root / DROP / "meta.json").read_text())["upstream"]
    assert [(r["spec"], r["status"]) for r in record] == [(str(checkout), "fixed")]


def test_a_checkouts_fingerprint_follows_its_uncommitted_changes(tmp_path: Path) -> None:
    checkout = fake_checkout(tmp_path / "optimizer")
    spec = parse_spec(str(checkout))
    assert (spec.kind, spec.project) == ("source", PROJECT)
    clean = spec.fingerprint()
    assert len(clean) == 40  # the HEAD commit alone
    fix(checkout, "drop-node")
    patched = spec.fingerprint()
    assert patched.startswith(clean + "+") and patched == spec.fingerprint()
    (checkout / "NEW.txt").write_text("x")
    assert spec.fingerprint() not in (clean, patched)

    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "setup.py").write_text("")
    before = parse_spec(str(plain)).fingerprint()
    (plain / "setup.py").write_text("# changed\n")
    assert parse_spec(str(plain)).fingerprint() != before


def test_only_a_project_with_an_offline_build_is_built_by_optfuzz() -> None:
    from fuzzer.builds.onnxoptimizer import build_checkout

    assert checkout_builder("onnxoptimizer") is build_checkout
    assert checkout_builder("onnxslim") is None
    assert checkout_builder("OnnxOptimizer") is build_checkout  # through the target's package
