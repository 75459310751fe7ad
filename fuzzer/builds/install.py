"""A built package made an installed distribution: the ``.dist-info`` folder that the
installed-packages layout (PyPA's "Recording installed projects" specification, from PEP 376
and PEP 627) asks for, so that ``importlib.metadata`` finds the build's name and version as
it finds a wheel's, and the direct-URL record (PEP 610) says which checkout it came from."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

from packaging.utils import canonicalize_name

#: what ``INSTALLER`` names.
INSTALLER = "optfuzz"


def record_distribution(site: Path, project: str, version: str, packages: list[str],
                        origin: Path) -> Path:
    """Write the ``.dist-info`` of ``project`` ``version`` whose files are the top-level
    ``packages`` (folders) already in ``site``; return its folder.

    Args:
        site: the import folder the packages are in.
        project: the distribution's name (any spelling; the folder uses the normalized one).
        version: its version (PEP 440).
        packages: names of the top-level package folders in ``site`` that it installed.
        origin: the source checkout it was built from (recorded as a ``file://`` URL).

    Raises:
        OSError: ``site`` cannot be written.
    """
    name = canonicalize_name(project).replace("-", "_")
    info = site / f"{name}-{version}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project}\n"
                                   f"Version: {version}\n")
    (info / "INSTALLER").write_text(INSTALLER + "\n")
    (info / "direct_url.json").write_text(json.dumps(
        {"url": origin.resolve().as_uri(), "dir_info": {}}) + "\n")
    rows = []
    for path in sorted(p for top in packages for p in (site / top).rglob("*") if p.is_file()):
        data = path.read_bytes()
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
        rows.append(f"{path.relative_to(site).as_posix()},sha256={digest.decode()},"
                    f"{len(data)}")
    for meta in ("METADATA", "INSTALLER", "direct_url.json"):
        rows.append(f"{info.name}/{meta},,")
    rows.append(f"{info.name}/RECORD,,")
    (info / "RECORD").write_text("\n".join(rows) + "\n")
    return info
