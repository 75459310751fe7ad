"""Instrumented builds: the sdist comes from the index with its sha256 checked, unpacks only
inside its folder, and is configured with the flags of its kind; the commands that need a
build say in one line how to make one."""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import sys
import tarfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
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


@pytest.fixture()
def index(tmp_path: Path):
    """A PEP 691 simple index on loopback serving one sdist; yields (url, files)."""
    archive = _tarball({"demo-1.0/setup.py": b"print('hi')\n"})
    files = {"sha": hashlib.sha256(archive).hexdigest(), "archive": archive}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            host = f"http://127.0.0.1:{self.server.server_port}"
            if self.path == "/simple/demo/":
                body = json.dumps({"files": [{
                    "filename": "demo-1.0.tar.gz", "url": f"{host}/files/demo-1.0.tar.gz",
                    "hashes": {"sha256": files["sha"]}}]}).encode()
            elif self.path == "/files/demo-1.0.tar.gz":
                body = files["archive"]
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/simple/", files
    server.shutdown()


def test_sdist_is_fetched_checked_and_unpacked(index, tmp_path: Path) -> None:
    url, _ = index
    archive = fetch_sdist("demo", "1.0", tmp_path / "sdists", url)
    top = unpack(archive, tmp_path / "src")
    assert (top / "setup.py").read_text() == "print('hi')\n"
    with pytest.raises(InputError, match="no sdist of demo 2.0"):
        fetch_sdist("demo", "2.0", tmp_path / "other", url)


def test_a_download_that_does_not_match_its_sha256_is_refused(index, tmp_path: Path) -> None:
    url, files = index
    files["archive"] = _tarball({"demo-1.0/setup.py": b"import evil\n"})
    with pytest.raises(InputError, match="sha256"):
        fetch_sdist("demo", "1.0", tmp_path, url)
    assert not list(tmp_path.glob("*.tar.gz"))


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
