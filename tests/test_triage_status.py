"""Status transitions of triage and replay through the CLI (real child processes), with the
fake target whose bugs are switched off by OPTFUZZ_FAKE_FIXED (a "fixed release")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import onnx
import pytest

from tests.conftest import unary_chain_model


def unary_model(path: Path, ops: list[str]) -> Path:
    """A chain of unary float ops on a [2, 3] input (tests.conftest), saved to ``path``."""
    onnx.save(unary_chain_model(tuple(ops)), path)
    return path


def optfuzz(*args: str, fixed: str = "", timeout: float = 120) -> \
        subprocess.CompletedProcess[str]:
    """Run the CLI in a child process; ``fixed`` sets OPTFUZZ_FAKE_FIXED."""
    env = dict(os.environ, OPTFUZZ_FAKE_FIXED=fixed)
    return subprocess.run([sys.executable, "-m", "fuzzer", *args], capture_output=True,
                          text=True, env=env, timeout=timeout)


def save_bundle(model: Path, passes: str, out: Path) -> None:
    result = optfuzz("check", str(model), "--target", "fake", "--passes", passes,
                     "--save", str(out))
    assert result.returncode == 1, result.stderr


def triage(folder: Path, *extra: str, fixed: str = "") -> dict[str, dict]:
    result = optfuzz("triage", str(folder), "--json", *extra, fixed=fixed)
    assert result.returncode == 0, result.stderr
    return {row["symptom"]: row for row in json.loads(result.stdout)}


def replay_record(folder: Path, bundle_id: str) -> dict:
    return json.loads((folder / bundle_id / "meta.json").read_text())["replay"]


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with three fake bundles: drop-node (output-mismatch), raise
    (optimizer-error), and drop-node,invalid (invalid-model that hides an output-mismatch)."""
    root = tmp_path_factory.mktemp("triage")
    model = unary_model(root / "m.onnx", ["Exp", "Neg", "Cos"])  # no op is ~identity
    out = root / "crashes"
    for passes in ("drop-node", "raise", "drop-node,invalid"):
        save_bundle(model, passes, out)
    return out


def test_new_then_seen_then_fixed_then_new_bundle(campaign: Path, tmp_path: Path) -> None:
    rows = triage(campaign)
    assert len(rows) == 3
    assert all(r["new"] and r["status"] == "not-replayed" for r in rows.values())

    rows = triage(campaign)
    assert not any(r["new"] for r in rows.values())
    assert all(r["status"] == "not-replayed" for r in rows.values())

    # a release that fixed drop-node: replay says the drop-node bundle is fixed, the others
    # still fail, and exits non-zero because some still fail
    result = optfuzz("replay", str(campaign), fixed="drop-node")
    assert result.returncode == 1, result.stdout + result.stderr
    drop = rows["output-mismatch"]["id"]
    assert replay_record(campaign, drop)["status"] == "fixed"
    assert replay_record(campaign, drop)["versions"]["target"] == "fake 1.0+fixed.drop-node"
    assert replay_record(campaign, rows["optimizer-error"]["id"])["status"] == "fails"

    fixed_rows = triage(campaign, fixed="drop-node")
    assert fixed_rows["output-mismatch"]["status"] == "fixed"
    assert fixed_rows["optimizer-error"]["status"] == "fails"
    # with the buggy release installed again, the fix does not apply: not replayed with it
    assert triage(campaign)["output-mismatch"]["status"] == "not-replayed"

    # a finding made after the last triage is new; the known ones are not
    model = unary_model(tmp_path / "b.onnx", ["Tanh", "Sigmoid"])
    save_bundle(model, "bloat", campaign)
    rows = triage(campaign)
    assert {k for k, r in rows.items() if r["new"]} == {"bloat"}


def test_replay_reports_changed_symptom_and_all_fixed(campaign: Path) -> None:
    ids = {k: r["id"] for k, r in triage(campaign).items()}
    # fixing only "invalid" uncovers the output mismatch that drop-node causes
    result = optfuzz("replay", str(campaign), "--symptom", "invalid-model", fixed="invalid")
    assert result.returncode == 1
    changed = replay_record(campaign, ids["invalid-model"])
    assert (changed["status"], changed["observed"]) == ("changed", "output-mismatch")
    row = triage(campaign, fixed="invalid")["invalid-model"]
    assert (row["status"], row["now_symptom"]) == ("changed", "output-mismatch")

    everything = "drop-node,raise,invalid,bloat"
    result = optfuzz("replay", str(campaign), fixed=everything)
    assert result.returncode == 0, result.stdout
    assert {r["status"] for r in triage(campaign, fixed=everything).values()} == {"fixed"}


def test_bad_input_is_one_line_and_exit_2(campaign: Path, tmp_path: Path) -> None:
    for args in (("triage", str(tmp_path / "missing")),
                 ("triage", str(campaign), "--symptom", "nonsense"),
                 ("replay", str(tmp_path / "missing"))):
        result = optfuzz(*args)
        assert result.returncode == 2
        assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
