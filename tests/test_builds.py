"""Instrumented builds: the sdist comes from the index through pip, its sha256 checked, unpacks only
inside its folder, and is configured with the flags of its kind; the commands that need a
build say in one line how to make one."""

from __future__ import annotations

import hashlib
import io
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from fuzzer.builds.onnxoptimizer import configure_args
from fuzzer.builds.sdist import fetch_sdist, unpack
from fuzzer.errors import InputError


def _tarball(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


#: an in-tree build backend: pip prepares the sdist's metadata without fetching anything.
_BACKEND = b"""
import os


def prepare_metadata_for_build_wheel(directory, config_settings=None):
    info = os.path.join(directory, "demo-1.0.dist-info")
    os.makedirs(info)
    with open(os.path.join(info, "METADATA"), "w") as handle:
        handle.write("Metadata-Version: 2.1\\nName: demo\\nVersion: 1.0\\n")
    return "demo-1.0.dist-info"
"""
_PYPROJECT = b"""[build-system]
requires = []
build-backend = "backend"
backend-path = ["."]
"""


@pytest.fixture()
def index(tmp_path: Path):
    """A local simple index (PEP 503, ``file://``) serving one tiny sdist, demo 1.0, and
    the pip options that use it alone; yields ``(options, write)``: ``write(archive,
    sha256)`` serves another archive under the same name and published hash."""
    root = tmp_path / "index"
    (root / "simple" / "demo").mkdir(parents=True)
    (root / "files").mkdir()

    def write(archive: bytes, sha: str) -> None:
        (root / "files" / "demo-1.0.tar.gz").write_bytes(archive)
        (root / "simple" / "demo" / "index.html").write_text(
            f'<html><body><a href="../../files/demo-1.0.tar.gz#sha256={sha}">'
            "demo-1.0.tar.gz</a></body></html>\n")

    archive = _tarball({"demo-1.0/setup.py": b"print('hi')\n",
                        "demo-1.0/pyproject.toml": _PYPROJECT,
                        "demo-1.0/backend.py": _BACKEND,
                        "demo-1.0/PKG-INFO": b"Metadata-Version: 2.1\nName: demo\n"
                                             b"Version: 1.0\n"})
    write(archive, hashlib.sha256(archive).hexdigest())
    yield ["--isolated", "--index-url", (root / "simple").as_uri()], write


def test_sdist_is_fetched_checked_and_unpacked(index, tmp_path: Path) -> None:
    options, _ = index
    archive = fetch_sdist("demo", "1.0", tmp_path / "sdists", options)
    top = unpack(archive, tmp_path / "src")
    assert (top / "setup.py").read_text() == "print('hi')\n"
    with pytest.raises(InputError, match="demo==2.0"):
        fetch_sdist("demo", "2.0", tmp_path / "other", options)


def test_a_download_that_does_not_match_its_sha256_is_refused(index, tmp_path: Path) -> None:
    options, write = index
    good = (tmp_path / "index" / "files" / "demo-1.0.tar.gz").read_bytes()
    write(_tarball({"demo-1.0/setup.py": b"import evil\n"}), hashlib.sha256(good).hexdigest())
    with pytest.raises(InputError, match="DO NOT MATCH THE HASHES.*--sdist PATH"):
        fetch_sdist("demo", "1.0", tmp_path / "sdists", options)
    assert not list((tmp_path / "sdists").glob("*.tar.gz"))


def test_unpack_refuses_members_outside_the_folder(tmp_path: Path) -> None:
    archive = tmp_path / "bad.tar.gz"
    archive.write_bytes(_tarball({"../evil.txt": b"x"}))
    with pytest.raises(InputError):
        unpack(archive, tmp_path / "src")
    assert not (tmp_path / "evil.txt").exists()


def test_each_kind_configures_its_own_flags(tmp_path: Path) -> None:
    pytest.importorskip("pybind11")
    cov = " ".join(configure_args(tmp_path / "onnxoptimizer-0.4.2", tmp_path / "obj",
                                  "coverage"))
    assert "--coverage" in cov and "optfuzz_gcov_dump=__gcov_dump" in cov
    assert "-fprofile-filter-files=.*/onnxoptimizer-0.4.2/onnxoptimizer/.*" in cov
    assert "FETCHCONTENT_FULLY_DISCONNECTED=ON" in cov
    san = " ".join(configure_args(tmp_path / "src", tmp_path / "obj", "sanitize"))
    assert "-fsanitize=address,undefined" in san and "--coverage" not in san


def _optfuzz(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fuzzer", *args], capture_output=True,
                          text=True, timeout=300, env=env)


@pytest.mark.parametrize("args, message", [
    (["target", "build", "onnxoptimizer"], "say which build"),
    (["target", "build", "onnxruntime", "--coverage"], "no instrumented build of onnxruntime"),
    (["coverage", "--code", "--target", "onnxruntime"], "no code coverage for target"),
])
def test_build_commands_refuse_bad_requests_in_one_line(args: list[str], message: str) -> None:
    proc = _optfuzz(*args)
    assert proc.returncode == 2
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_a_guided_campaign_without_a_coverage_build_says_how_to_make_one(
        tmp_path: Path) -> None:
    import os

    env = dict(os.environ, OPTFUZZ_CACHE_DIR=str(tmp_path / "cache"))
    proc = _optfuzz("fuzz", "--guided", "--max-cases", "5", "--out", str(tmp_path / "out"),
                    "--quiet", env=env)
    assert proc.returncode == 2
    assert "optfuzz target build onnxoptimizer --coverage" in proc.stderr
    assert "Traceback" not in proc.stderr
