"""The "Environment" section of report.md: where the bug was seen, as an issue template asks
for it: OS and architecture, Python, the versions meta.json records (the target's first),
and the onnxruntime execution provider that ran the models.

meta.json records package versions, not the machine: OS and architecture are those of the
machine that writes the report (a campaign's report is written where it ran), and the
section says so.
"""

from __future__ import annotations

import platform

from fuzzer.store.meta import BundleMeta

#: the onnxruntime execution provider of the reference run, of the optimized model's run and
#: of the report's standalone repro.
EXECUTION_PROVIDER = "CPUExecutionProvider"
#: meta.json's ``versions`` key of the Python version.
PYTHON = "python"


def machine() -> str:
    """``<OS> <release> (<architecture>)`` of this machine, e.g. ``Linux 6.1.0 (x86_64)``."""
    return f"{platform.system()} {platform.release()} ({platform.machine()})"


def versions_table(meta: BundleMeta) -> str:
    """A markdown table of the target's version and every package version meta.json
    records but Python's (a line of its own)."""
    rows = [(meta.target.name, meta.target.version),
            *((name, version) for name, version in meta.versions.items() if name != PYTHON)]
    return "\n".join(["| package | version |", "| --- | --- |",
                      *(f"| {name} | {version} |" for name, version in rows)])


def environment_section(meta: BundleMeta) -> str:
    """The body of the "Environment" section (no heading, ends with a newline)."""
    python = meta.versions.get(PYTHON) or f"{platform.python_version()} (this machine's)"
    lines = [f"- OS and architecture: {machine()} (the machine that wrote this report)",
             f"- Python: {python}",
             f"- onnxruntime execution provider: {EXECUTION_PROVIDER}, graph optimizations "
             "off for the reference run",
             "", versions_table(meta)]
    return "\n".join(lines) + "\n"
