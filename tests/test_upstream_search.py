"""The pieces of the upstream checks that need no process: the binary search over releases
with a fake probe, the listing of releases, SPECs, and repro.py's verdicts."""

from __future__ import annotations

from pathlib import Path

import pytest

from fuzzer.errors import InputError
from fuzzer.upstream.bisect import BAD, GOOD, SKIP, TOO_OLD, bisect
from fuzzer.upstream.releases import Releases, releases_of
from fuzzer.upstream.spec import parse_spec
from fuzzer.upstream.verdict import judge

VERSIONS = [f"1.{minor}" for minor in range(20)]


def probe_of(outcomes: dict[str, str], default: str = GOOD) -> tuple[list[str], object]:
    """A probe answering ``outcomes`` (``default`` elsewhere) and the list of versions it
    was asked about, in order."""
    asked: list[str] = []

    def probe(version: str) -> tuple[str, str | None]:
        asked.append(version)
        outcome = outcomes.get(version, default)
        return outcome, f"{outcome} at {version}" if outcome in (SKIP, TOO_OLD) else None

    return asked, probe


def bad_between(first: int, last: int) -> dict[str, str]:
    return {VERSIONS[i]: BAD for i in range(first, last + 1)}


def test_a_fixed_bug_gets_its_last_good_first_bad_and_first_fixed_release() -> None:
    asked, probe = probe_of(bad_between(5, 12))
    found = bisect(VERSIONS, probe, found="1.9")
    assert (found.last_good, found.first_bad, found.first_fixed, found.newest_checked) == \
        ("1.4", "1.5", "1.13", "1.19")
    assert asked[0] == "1.19" and asked[1] == "1.9"  # the newest first, then the anchor
    assert len(asked) == len(set(asked)) <= 10  # each once, about log2(20) per boundary
    assert found.checked == sorted(asked, key=VERSIONS.index) and not found.skipped


def test_a_bug_the_newest_release_still_has_is_searched_below_it() -> None:
    asked, probe = probe_of(bad_between(7, 19))
    found = bisect(VERSIONS, probe, found="1.19")
    assert (found.last_good, found.first_bad, found.first_fixed) == ("1.6", "1.7", None)
    assert "still fails in 1.19; first bad 1.7 (last good 1.6)" in found.summary()
    asked, probe = probe_of({}, default=BAD)
    found = bisect(VERSIONS, probe)
    assert (found.last_good, found.first_bad) == (None, "1.0")
    assert "bad since the oldest release checked" in found.summary()


def test_skipped_releases_are_stepped_around_and_said() -> None:
    outcomes = {**bad_between(5, 12), "1.4": SKIP, "1.13": SKIP, "1.19": SKIP}
    asked, probe = probe_of(outcomes)
    installable = [v for v in VERSIONS if v != "1.2"]
    found = bisect(installable, probe, found="1.9", left_out={"1.2": "no wheel here"})
    assert found.newest_checked == "1.18"  # the newest with a verdict
    assert (found.last_good, found.first_bad, found.first_fixed) == ("1.3", "1.5", "1.14")
    assert set(found.skipped) == {"1.2", "1.4", "1.13", "1.19"}
    assert list(found.skipped) == ["1.2", "1.4", "1.13", "1.19"]  # in version order
    assert found.skipped["1.2"] == "no wheel here" and "1.2" not in asked


def test_below_a_release_too_old_for_the_test_nothing_older_is_tried() -> None:
    outcomes = {**{VERSIONS[i]: TOO_OLD for i in range(12)}, **bad_between(12, 19)}
    asked, probe = probe_of(outcomes)
    found = bisect(VERSIONS, probe)
    assert found.first_bad == "1.12" and found.last_good is None
    assert len(asked) <= 8, asked
    assert found.skipped.keys() == set(VERSIONS[:12])
    assert any(why.startswith("not tried: older than") for why in found.skipped.values())


def test_nothing_to_check_and_nothing_that_fails() -> None:
    _, probe = probe_of({}, default=SKIP)
    nothing = bisect(VERSIONS[:3], probe)
    assert nothing.newest_checked is None and len(nothing.skipped) == 3
    assert nothing.summary().startswith("no release could be checked")
    _, probe = probe_of({})
    clean = bisect(VERSIONS, probe, found="1.5")
    assert (clean.first_bad, clean.first_fixed, clean.newest_checked) == (None, None, "1.19")
    assert clean.summary().startswith("no release checked shows it")
    assert bisect([], probe).to_json("t")["checked"] == []


def test_releases_leave_out_pre_releases_and_yanked_files_and_say_which_lack_a_wheel() -> None:
    files = [{"filename": "onnxslim-0.1.1-py3-none-any.whl"},
             {"filename": "onnxslim-0.1.2rc1-py3-none-any.whl"},
             {"filename": "onnxslim-0.1.3-py3-none-any.whl", "yanked": "broken"},
             {"filename": "onnxslim-0.1.4.tar.gz"},
             {"filename": "onnxslim-0.1.5-cp27-cp27mu-manylinux1_x86_64.whl"},
             {"filename": "onnxslim-0.1.6-py3-none-any.whl", "requires-python": ">=9"},
             {"filename": "onnxslim-0.1.10-py3-none-any.whl"},
             {"filename": "other-9.0-py3-none-any.whl"}, {"filename": "README"}]
    found = releases_of("OnnxSlim", files)
    assert found.versions == ["0.1.1", "0.1.10"]
    assert list(found.skipped) == ["0.1.4", "0.1.5", "0.1.6"]
    assert found.between("0.1.2..").versions == ["0.1.10"]
    assert found.between("..0.1.5").skipped.keys() == {"0.1.4", "0.1.5"}
    for bad in ("0.1", "x..y", "2..1", ".."):
        with pytest.raises(InputError):
            Releases().between(bad)


def test_specs_name_a_release_a_wheel_an_sdist_or_a_checkout(tmp_path: Path) -> None:
    spec = parse_spec("OnnxSlim==0.1.80")
    assert (spec.text, spec.kind, spec.project, spec.version) == \
        ("onnxslim==0.1.80", "release", "onnxslim", "0.1.80")
    wheel = tmp_path / "onnxoptimizer-0.3.13-cp311-cp311-linux_x86_64.whl"
    wheel.write_bytes(b"x")
    assert parse_spec(str(wheel)).project == "onnxoptimizer"
    assert parse_spec(str(wheel)).fingerprint() == parse_spec(str(wheel)).fingerprint() != ""
    sdist = tmp_path / "onnxslim-0.1.80.tar.gz"
    sdist.write_bytes(b"x")
    assert parse_spec(str(sdist)).kind == "sdist"
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    assert parse_spec(str(tmp_path)).kind == "source"
    for bad in ("onnxslim", "onnxslim>=0.1", "onnxslim==0.1.*", "./missing.whl",
                str(tmp_path / "pyproject.toml"), str(tmp_path / "sub")):
        with pytest.raises(InputError):
            parse_spec(bad)


def test_repro_exit_status_and_output_make_the_verdict() -> None:
    line = "expected symptom: output-mismatch; observed: {}"
    fails = judge(1, line.format("output-mismatch: 3 values differ") + "\nreproduced", "", "2")
    assert (fails.status, fails.observed) == ("fails", "output-mismatch")
    assert judge(0, line.format("none") + "\nnot reproduced", "", "2").status == "fixed"
    changed = judge(0, line.format("invalid-model: bad; bloat: 1 node"), "", "2")
    assert (changed.status, changed.observed) == ("changed", "invalid-model")
    cannot = judge(2, "", "cannot run the repro: No module named 'onnx'", "2")
    assert cannot.status == "untestable" and "No module named" in cannot.message
    assert judge(-9, "", "", "2").status == "changed"


def test_meta_keeps_upstream_and_regression_as_typed_optional_fields() -> None:
    from fuzzer.store.meta import BundleMeta, MetaError
    from tests.bundle_files import meta_dict

    plain = BundleMeta.from_json(meta_dict("bloat-00000001"))
    assert plain.upstream is None and "upstream" not in plain.to_json()
    record = {"spec": "onnxslim==0.1.80", "version": "0.1.80", "status": "fixed",
              "time": "t", "message": None, "observed": None}
    data = meta_dict("bloat-00000001", upstream=[record], regression={"first_bad": "0.1.50"},
                     later={"kept": True})
    meta = BundleMeta.from_json(data)
    assert meta.upstream == [record] and meta.regression == {"first_bad": "0.1.50"}
    assert meta.extra == {"later": {"kept": True}}
    keys = list(meta.to_json())
    assert keys.index("damage") < keys.index("upstream") < keys.index("regression") < \
        keys.index("later")
    with pytest.raises(MetaError, match="upstream"):
        BundleMeta.from_json(meta_dict("bloat-00000001", upstream={"spec": "x"}))
