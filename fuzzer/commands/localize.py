"""``optfuzz localize BUNDLE|MODEL``: find the pass(es) responsible for a finding.

On a bundle folder it re-runs ``model.onnx`` with ``inputs.npz`` under the bundle's target
configuration, localizes, and updates ``meta.json`` (``responsible_passes``,
``localization``). The bundle keeps its folder and id even when the signature changes (a
person may already have cited the id): the new signature is recorded as ``signature`` and the
old one appended to ``aliases``, where deduplication (:func:`fuzzer.findings.find_bundle`)
still finds it. On a model file it runs one test and prints the result.

Exit status: 0 localized, 1 not reproduced or not localized, 2 bad input.
"""

from __future__ import annotations

from pathlib import Path

import typer

from fuzzer.commands import options
from fuzzer.commands.command import Command


@options.grouped
def localize(
    path: Path = typer.Argument(..., help="A bundle folder (with meta.json) or an .onnx "
                                "file."),
    target: options.TargetArgs = None, inputs: options.InputArgs = None,
    execution: options.ExecutionArgs = None,
) -> None:
    """Find the minimal pass subsequence that still shows the finding of PATH (the
    passes searched: --passes, else the bundle's configuration, else the target's
    default list)."""
    from fuzzer.commands.localize_run import load_subject, run_localization
    from fuzzer.commands.progress import sandbox_activity

    subject = load_subject(path, target, inputs)
    with execution.sandbox() as sandbox, \
            sandbox_activity(sandbox, f"localizing {path.name}"):
        code = run_localization(subject, sandbox)
    raise typer.Exit(code)


COMMAND = Command("localize", localize)
