"""Third-party targets: the package in tests/plugin_target declares two entry points of the
``optfuzz.targets`` group in its pyproject.toml (onnx's inliner, and one whose module fails
on import) and the inliner's motif family through the ``optfuzz.motifs`` group: a new target
with a family of its own is one target module and one family folder, nothing in optfuzz. The
test installs it into the run as pip would, as a ``.dist-info`` folder with its
``entry_points.txt`` on a temporary sys.path entry (no network, no build, the shared
environment untouched), and for child processes on PYTHONPATH."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import tomllib

from fuzzer.errors import InputError
from fuzzer.targets import base

PLUGIN = Path(__file__).parent / "plugin_target"
ROOT = Path(__file__).parent.parent


def _install(folder: Path) -> str:
    """A ``.dist-info`` for tests/plugin_target in ``folder`` (from its pyproject.toml);
    returns the distribution name."""
    project = tomllib.loads((PLUGIN / "pyproject.toml").read_text())["project"]
    info = folder / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\n"
                                   f"Version: {project['version']}\n")
    lines = [f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in points.items())
             for group, points in project["entry-points"].items()]
    (info / "entry_points.txt").write_text("\n".join(lines))
    return project["name"]


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory: pytest.TempPathFactory):
    """sys.path entries that install the plugin package (restored afterwards)."""
    site = tmp_path_factory.mktemp("site")
    _install(site)
    entries = [str(site), str(PLUGIN)]
    sys.path[:0] = entries
    _rediscover()
    yield entries
    del sys.path[:2]
    _rediscover()
    for name in ("onnx-inliner", "broken-example"):
        base._cache.pop(name, None)


def _rediscover() -> None:
    """Read the entry points again: targets, and the motif library (and the generator's
    pools drawn from it)."""
    from generators import generate, motifs

    base.TARGETS.rediscover()
    motifs.reload()
    generate._motif_pool.cache_clear()


def _optfuzz(args: list[str], entries: list[str], prelude: str = "") -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([*entries, str(ROOT)]))
    code = f"{prelude}import sys; sys.argv = ['optfuzz', *{args!r}]\n" \
           "from fuzzer.cli import main\nmain()\n"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=120, cwd=ROOT)


def test_plugin_names_join_the_registry(plugin_path: list[str]) -> None:
    names = base.target_names()
    assert "onnx-inliner" in names and "broken-example" in names
    assert set(base.TARGETS) <= set(names)
    assert base.TARGETS["onnx-inliner"] == "optfuzz_inliner_example:InlinerTarget"
    target = base.get_target("onnx-inliner")
    assert target.name == "onnx-inliner"
    assert target.passes_of(target.default_config()) == ["inline_local_functions"]


def test_builtin_name_wins_over_a_plugin(plugin_path: list[str], tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    info = tmp_path / "shadow-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: shadow\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[optfuzz.targets]\nonnxruntime = shadow:Nope\n")
    sys.path.insert(0, str(tmp_path))
    base.TARGETS.rediscover()
    try:
        assert base.target_names().count("onnxruntime") == 1
        assert base.TARGETS["onnxruntime"].endswith(":OnnxRuntimeTarget")
        assert base.TARGETS.plugin("onnxruntime") is None
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "left out" in err[0] and "built-in" in err[0]
    finally:
        sys.path.remove(str(tmp_path))
        base.TARGETS.rediscover()


def test_plugin_that_fails_to_import_is_one_line(plugin_path: list[str]) -> None:
    with pytest.raises(InputError) as info:
        base.cli_target("broken-example")
    message = str(info.value)
    assert "\n" not in message
    assert "broken-example" in message and "ModuleNotFoundError" in message


def test_plugin_target_runs_a_case_in_the_sandbox(plugin_path: list[str]) -> None:
    """A generated model with model-local functions goes through the plugin's inliner in a
    worker and comes back changed, with the outputs it had."""
    from fuzzer.execution.case import TestCase
    from fuzzer.execution.sandbox import Sandbox
    from generators.generate import generate

    seed = next(s for s in range(50) if generate(s, passes=["InlinePass"]).model.functions)
    case = TestCase("onnx-inliner", {"passes": ["inline_local_functions"],
                                     "fixed_point": False},
                    {"kind": "generated", "seed": seed, "passes": ["InlinePass"]},
                    input_seed=seed, keep=True)
    with Sandbox(jobs=1, timeout=60) as sandbox:
        result = sandbox.run(case)
    assert result.unusable is None
    assert result.changed
    # the calls became their bodies: more nodes (bloat, which this target does not
    # document), the same outputs
    assert {f.symptom for f in result.findings} <= {"bloat"}


def test_the_example_is_one_target_module_and_one_family_folder() -> None:
    package = PLUGIN / "optfuzz_inliner_example"
    files = {p.relative_to(package).as_posix() for p in package.rglob("*.py")}
    assert files == {"__init__.py", "broken.py", "motifs/__init__.py", "motifs/chains.py"}


def test_plugin_family_joins_the_motif_library(plugin_path: list[str]) -> None:
    from generators.generate import generate
    from generators.motifs import HINTED_ONLY_MOTIFS, MOTIFS, families, motifs_for_pass

    assert families()[-1].__name__ == "optfuzz_inliner_example.motifs.chains"
    assert [m.name for m in motifs_for_pass("inline_local_functions")] == ["inliner-chain"]
    assert "inliner-chain" in HINTED_ONLY_MOTIFS and "fn-nested" in MOTIFS
    hints = base.get_target("onnx-inliner").generation_hints(
        {"passes": ["inline_local_functions"], "fixed_point": False})
    drawn = {m for s in range(10) for m in generate(s, passes=hints).motifs}
    assert "inliner-chain" in drawn


def test_a_campaign_on_the_plugin_draws_its_family(plugin_path: list[str],
                                                   tmp_path: Path) -> None:
    out = tmp_path / "crashes"
    done = _optfuzz(["fuzz", "--target", "onnx-inliner", "--max-cases", "12", "--jobs", "1",
                     "--seed", "1", "--out", str(out)], plugin_path)
    assert done.returncode in (0, 1), done.stderr
    stats = json.loads((out / "campaign.json").read_text())
    per_motif = _find(stats, "per_motif")
    assert per_motif.get("inliner-chain"), per_motif


def _find(data: Any, key: str) -> Any:
    """The first value of ``key`` anywhere in the JSON ``data``."""
    if isinstance(data, dict):
        if key in data:
            return data[key]
        data = list(data.values())
    for item in data if isinstance(data, list) else ():
        if (found := _find(item, key)) is not None:
            return found
    return None


@pytest.mark.slow
def test_targets_command_lists_plugins_and_versions(plugin_path: list[str]) -> None:
    done = _optfuzz(["targets"], plugin_path)
    assert done.returncode == 0, done.stderr
    out = " ".join(done.stdout.split())
    for name in ("onnxoptimizer", "onnxruntime", "onnxscript", "version-converter",
                 "onnx-inliner", "broken-example"):
        assert name in out
    assert "optfuzz-inliner-example 0.1.0" in out
    warnings = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(warnings) == 1 and warnings[0].startswith("warning: target broken-example")
    assert "Traceback" not in done.stdout + done.stderr


@pytest.mark.slow
def test_missing_extra_names_its_install_command(plugin_path: list[str]) -> None:
    """With onnxscript's packages missing, a command that needs the target ends in one line
    naming ``pip install 'optfuzz[onnxscript]'``, and ``optfuzz targets`` shows it."""
    block = "import sys; sys.modules['onnxscript'] = None; sys.modules['onnx_ir'] = None\n"
    done = _optfuzz(["coverage", "--target", "onnxscript", "--cases", "1"], plugin_path,
                    block)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "pip install 'optfuzz[onnxscript]'" in lines[0]
    listing = _optfuzz(["targets"], plugin_path, block)
    assert "pip install 'optfuzz[onnxscript]'" in " ".join(listing.stdout.split())


def test_install_hint_table_covers_the_extras() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    for target, extra in base.EXTRAS.items():
        assert extra in extras
        assert base.install_hint(target) == f"pip install 'optfuzz[{extra}]'"
    assert base.install_hint("version-converter") is None
