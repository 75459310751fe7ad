"""``optfuzz replay --against`` and ``optfuzz bisect`` on fake-target bundles, against
releases of the fake target built here as wheels (:mod:`tests.fake_releases`) and installed
from a folder (``--find-links``) into real cached environments: no network.

The releases: 0.7 lacks the ``drop-node`` bug (not made yet), 0.8 to 1.0 have every bug,
1.1 cannot be installed (it needs a package no folder offers), 1.2 and 1.3 fixed
``drop-node``. No release fixed ``raise``. The bundles were found with the fake target
"1.0" (the version it reports where no release is installed)."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from urllib.parse import urlparse

import pytest
from typer.testing import CliRunner

from fuzzer.cli import app
from fuzzer.errors import InputError
from tests.fake_releases import fake_bundle, fake_release

pytestmark = pytest.mark.slow

DROP, RAISE = "output-mismatch-00000001", "optimizer-error-00000002"
SCHEMA = Path(__file__).parent / "data" / "junit.xsd"


@pytest.fixture(scope="module")
def releases(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of the fake target's release wheels."""
    folder = tmp_path_factory.mktemp("releases")
    for version, fixed in (("0.7", ("drop-node",)), ("0.8", ()), ("0.9", ()), ("1.0", ()),
                           ("1.2", ("drop-node",)), ("1.3", ("drop-node",))):
        fake_release(folder, version, fixed)
    fake_release(folder, "1.1", requires=("optfuzz-missing-dependency>=1",))
    return folder


@pytest.fixture(scope="module")
def env_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One environment cache for the module's tests (environments are shared)."""
    return tmp_path_factory.mktemp("envs")


@pytest.fixture
def bundles(tmp_path: Path) -> Path:
    """A folder with one bundle of the ``drop-node`` fault and one of ``raise``."""
    root = tmp_path / "crashes"
    fake_bundle(root, DROP, "drop-node")
    fake_bundle(root, RAISE, "raise")
    return root


def optfuzz(*args: str) -> tuple[int, str]:
    """(exit status, output) of the command line ``args``, bad input ending as
    :func:`fuzzer.cli.main` ends it (status 2, one line)."""
    result = CliRunner().invoke(app, list(args))
    if isinstance(result.exception, InputError):
        return 2, f"error: {result.exception}"
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


def meta(folder: Path, bundle: str) -> dict:
    return json.loads((folder / bundle / "meta.json").read_text())


def test_replay_against_a_fixed_build_turns_exactly_its_faults_bundles_fixed(
        bundles: Path, releases: Path, env_cache: Path, tmp_path: Path) -> None:
    import xmlschema

    wheel = str(releases / "optfuzz_fake-1.2-py3-none-any.whl")
    report = tmp_path / "replay.xml"
    common = ["--find-links", str(releases), "--env-cache", str(env_cache)]
    code, out = optfuzz("replay", str(bundles), "--against", wheel, "--against",
                        "optfuzz-fake==1.0", "--against", "optfuzz-fake==1.1", *common,
                        "--junitxml", str(report))
    assert code == 1, out
    lines = out.splitlines()
    assert any(DROP in ln and "(1.2) fixed" in ln for ln in lines), out
    assert any(RAISE in ln and "(1.2) still fails" in ln for ln in lines), out
    assert sum("(1.0) still fails" in ln for ln in lines) == 2, out
    assert [ln for ln in lines if "optfuzz-fake==1.1" in ln] == \
        [next(ln for ln in lines if ln.startswith("error: cannot install optfuzz-fake==1.1"))]
    records = {r["spec"]: r for r in meta(bundles, DROP)["upstream"]}
    assert (records[wheel]["status"], records[wheel]["version"]) == ("fixed", "1.2")
    assert records["optfuzz-fake==1.0"]["status"] == "fails"
    assert records["optfuzz-fake==1.0"]["observed"] == "output-mismatch"
    assert {r["status"] for r in meta(bundles, RAISE)["upstream"]} == {"fails"}

    xmlschema.XMLSchema(SCHEMA).validate(report)
    suites = _suites(report)
    assert suites[wheel] == {DROP: None, RAISE: "failure"}
    assert suites["optfuzz-fake==1.0"] == {DROP: "failure", RAISE: "failure"}
    assert suites["optfuzz-fake==1.1"] == {"install": "error"}

    # one bundle's folder; the record of the spec is replaced, not added to
    code, out = optfuzz("replay", str(bundles / DROP), "--against", wheel, *common)
    assert code == 0 and "replayed 1 bundle(s) against 1 build(s): 1 fixed" in out, out
    assert [r["spec"] for r in meta(bundles, DROP)["upstream"]].count(wheel) == 1
    assert len(meta(bundles, DROP)["upstream"]) == 2  # 1.0 and the wheel; 1.1 never ran
    assert not list(env_cache.glob(".building-*"))

    # against the installed versions: one suite, a failure per bundle still failing
    code, out = optfuzz("replay", str(bundles), "--junitxml", str(report))
    assert code == 1, out
    xmlschema.XMLSchema(SCHEMA).validate(report)
    assert _suites(report) == {"installed": {DROP: "failure", RAISE: "failure"}}


def _suites(report: Path) -> dict[str, dict[str, str | None]]:
    """Suite name -> test case name -> its result element's tag (None: passed)."""
    import xml.etree.ElementTree as ElementTree

    root = ElementTree.parse(report).getroot()
    return {suite.get("name"): {case.get("name"): next((r.tag for r in case), None)
                                for case in suite.iter("testcase")}
            for suite in root.iter("testsuite")}


def test_bisect_finds_last_good_first_bad_and_first_fixed_and_steps_around_a_broken_release(
        bundles: Path, releases: Path, env_cache: Path) -> None:
    code, out = optfuzz("bisect", str(bundles), "--find-links", str(releases),
                        "--env-cache", str(env_cache))
    assert code == 0, out
    drop = meta(bundles, DROP)["regression"]
    assert (drop["last_good"], drop["first_bad"], drop["first_fixed"],
            drop["newest_checked"]) == ("0.7", "0.8", "1.2", "1.3")
    assert list(drop["skipped"]) == ["1.1"]
    assert "cannot install optfuzz-fake==1.1" in drop["skipped"]["1.1"]
    assert set(drop["checked"]) >= {"0.7", "0.8", "1.0", "1.2", "1.3"}
    raised = meta(bundles, RAISE)["regression"]
    assert (raised["last_good"], raised["first_bad"], raised["first_fixed"],
            raised["newest_checked"]) == (None, "0.7", None, "1.3")
    assert f"{DROP}" in out and "fixed in 1.2; first bad 0.8 (last good 0.7)" in out, out
    assert "still fails in 1.3; first bad 0.7" in out, out
    # environments are shared between the bundles: one per release probed
    assert len(list(env_cache.glob("*/env.json"))) <= 7


def test_bad_input_is_one_line_and_exit_2(bundles: Path, tmp_path: Path) -> None:
    for args in (["replay", str(bundles), "--against", "optfuzz-fake>=1"],
                 ["replay", str(bundles), "--against", str(tmp_path / "none.whl")],
                 ["replay", str(bundles), "--against", "optfuzz-fake==1.0",
                  "--junitxml", str(tmp_path / "no" / "report.xml")],
                 ["bisect", str(bundles), "--target-versions", "2..1"],
                 ["bisect", str(bundles), "--find-links", str(tmp_path / "none")],
                 ["bisect", str(tmp_path / "missing")]):
        code, out = optfuzz(*args)
        assert code == 2 and len(out.splitlines()) == 1, (args, out)


def _index_reachable() -> bool:
    from fuzzer.builds.sdist import DEFAULT_INDEX

    try:
        socket.create_connection((urlparse(DEFAULT_INDEX).hostname, 443), timeout=5).close()
    except OSError:
        return False
    return True


@pytest.mark.skipif(not _index_reachable(), reason="the package index is not reachable")
def test_a_released_version_installs_from_the_index_beside_this_environment(
        env_cache: Path) -> None:
    from fuzzer.store.versions import environment_versions
    from fuzzer.upstream.environments import EnvironmentCache
    from fuzzer.upstream.releases import list_releases
    from fuzzer.upstream.spec import release

    listed = list_releases("onnxslim")
    assert "0.1.80" in listed.versions and not any("rc" in v for v in listed.versions)
    env = EnvironmentCache(env_cache).ensure(release("onnxslim", "0.1.80"))
    facts = env.probe("target", "onnxslim", "onnxslim", "FusionGemm", "NoSuchPass")
    assert (facts["version"], facts["missing"], facts["error"]) == \
        ("0.1.80", ["NoSuchPass"], None)
    assert Path(facts["location"]).is_relative_to(env.folder)
    shared = env.run(["-c", "import onnx, numpy; print(onnx.__version__, numpy.__version__)"])
    versions = environment_versions()
    assert shared.stdout.split() == [versions["onnx"], versions["numpy"]]
