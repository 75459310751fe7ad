"""What an environment of :mod:`fuzzer.upstream.environments` holds, asked from inside it.

Run there as ``python -m fuzzer.upstream.probe COMMAND ...``; prints one JSON value:

- ``installed SITE``: the distributions installed in the folder SITE, ``[[name, version]]``;
- ``unmet PROJECT``: PROJECT's requirements (for no extra, markers evaluated here) that no
  distribution on the import path satisfies, as requirement strings;
- ``target NAME PROJECT [PASS ...]``: ``{"version", "location", "missing", "error",
  "lacks_module"}`` of target NAME as this environment has it: PROJECT's installed version
  and folder, the PASSes the target lacks, why optfuzz cannot drive the target here (None
  when it can) and whether that is because PROJECT lacks a module of its own that optfuzz's
  adapter imports (an older API);
- ``repro BUNDLE TIMEOUT MEMORY``: the text of the bundle's repro.py rendered here
  (:func:`fuzzer.report.repro.render_repro`: the target call written for this build, e.g.
  onnxslim's skipped patterns among this release's own), with its child's timeout in
  seconds and address-space limit in bytes (``none``: no limit).

Imports only the standard library and ``packaging`` until a command needs optfuzz's own
modules (``target``, ``repro``).
"""

from __future__ import annotations

import json
import sys
from importlib import metadata
from pathlib import Path
from typing import Any


def installed(site: str) -> list[list[str]]:
    """``[[name, version]]`` of the distributions in the folder ``site``."""
    return sorted([d.metadata["Name"], d.version] for d in metadata.distributions(path=[site]))


def unmet(project: str) -> list[str]:
    """The requirements of installed ``project`` that nothing installed satisfies.

    Raises:
        metadata.PackageNotFoundError: ``project`` is not installed.
    """
    from packaging.requirements import Requirement

    missing = []
    for text in metadata.requires(project) or []:
        requirement = Requirement(text)
        if requirement.marker and not requirement.marker.evaluate({"extra": ""}):
            continue
        try:
            have = metadata.version(requirement.name)
        except metadata.PackageNotFoundError:
            missing.append(text)
            continue
        if not requirement.specifier.contains(have, prereleases=True):
            missing.append(text)
    return missing


def target(name: str, project: str, passes: list[str]) -> dict[str, Any]:
    """What target ``name`` is here: ``project``'s version and folder, the ``passes`` it
    lacks, the one-line error that kept optfuzz from loading it (or None) and whether
    ``project`` lacks a module of its own that the adapter imports."""
    dist = metadata.distribution(project)
    facts: dict[str, Any] = {"version": dist.version, "location": str(dist.locate_file("")),
                             "missing": [], "error": None, "lacks_module": False}
    try:
        from fuzzer.targets import get_target

        adapter = get_target(name)
        facts["missing"] = [p for p in passes if not adapter.accepts_pass(p)]
    except Exception as exc:  # an old release optfuzz's adapter cannot load
        text = str(exc).strip().splitlines()
        facts["error"] = f"{type(exc).__name__}: {text[0] if text else '(no message)'}"
        missing = next((e.name for e in (exc, exc.__context__)
                        if isinstance(e, ImportError) and e.name), None)
        facts["lacks_module"] = bool(missing) and \
            missing.split(".")[0] in _top_level(dist)
    return facts


def _top_level(dist: metadata.Distribution) -> set[str]:
    """The top-level modules ``dist`` installs."""
    names = set()
    for path in dist.files or []:
        top = path.parts[0] if path.parts else ""
        if top and not top.endswith((".dist-info", ".data")) and top != "..":
            names.add(top.removesuffix(".py"))
    return names


def repro(bundle: str, timeout: float, memory_limit: int | None) -> str:
    """The text of repro.py of the bundle in folder ``bundle``, rendered with the target
    as installed here.

    Raises:
        OSError, ValueError: its meta.json cannot be read.
        KeyError: its target or symptom is not registered.
    """
    from fuzzer.report.repro import render_repro, repro_context
    from fuzzer.store.meta import META_FILE, read_meta

    meta = read_meta(Path(bundle) / META_FILE)
    return render_repro(**repro_context(meta), timeout=timeout, memory_limit=memory_limit)


def main(argv: list[str]) -> None:
    """Run the COMMAND of ``argv`` (see the module docstring) and print its JSON."""
    command, *args = argv
    if command == "installed":
        print(json.dumps(installed(args[0])))
    elif command == "unmet":
        print(json.dumps(unmet(args[0])))
    elif command == "target":
        print(json.dumps(target(args[0], args[1], args[2:])))
    elif command == "repro":
        limit = None if args[2] == "none" else int(args[2])
        print(json.dumps(repro(args[0], float(args[1]), limit)))
    else:
        raise SystemExit(f"unknown probe {command!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
