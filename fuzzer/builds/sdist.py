"""Source distributions from the package index, fetched and checked as pip does.

The index is asked through its JSON simple API (PEP 691) for the file list of a project; the
sdist of the wanted version is downloaded and its sha256 compared with the index's. A local
archive (``--sdist PATH``) skips the network.
"""

from __future__ import annotations

import hashlib
import json
import os
import tarfile
import urllib.error
import urllib.request
from pathlib import Path

from fuzzer.errors import InputError

DEFAULT_INDEX = "https://pypi.org/simple/"
_ACCEPT = "application/vnd.pypi.simple.v1+json"
TIMEOUT = 120.0  # seconds per request


def sdist_name(project: str, version: str) -> str:
    """The sdist file name of ``project`` at ``version`` (PEP 625: normalized name)."""
    return f"{project.replace('-', '_')}-{version}.tar.gz"


def fetch_sdist(project: str, version: str, folder: Path, index: str = DEFAULT_INDEX) -> Path:
    """Download the sdist of ``project==version`` into ``folder`` (kept there as a cache:
    an archive already present whose sha256 matches the index is not fetched again).

    Raises:
        InputError: the index cannot be reached, has no sdist of that version, or the
            download does not match its sha256.
    """
    url = index.rstrip("/") + f"/{project}/"
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers={"Accept": _ACCEPT}),
                                    timeout=TIMEOUT) as resp:
            files = json.load(resp)["files"]
    except (OSError, urllib.error.URLError, ValueError, KeyError) as exc:
        raise InputError(f"cannot list {project} on {index}: {exc}; pass --sdist PATH to "
                         "build from an archive you have") from None
    wanted = {sdist_name(project, version), f"{project}-{version}.tar.gz"}
    entry = next((f for f in files if f.get("filename") in wanted), None)
    if entry is None:
        raise InputError(f"{index} has no sdist of {project} {version}")
    sha = entry.get("hashes", {}).get("sha256", "")
    dest = folder / entry["filename"]
    if dest.is_file() and hashlib.sha256(dest.read_bytes()).hexdigest() == sha:
        return dest
    try:
        with urllib.request.urlopen(entry["url"], timeout=TIMEOUT) as resp:
            data = resp.read()
    except (OSError, urllib.error.URLError) as exc:
        raise InputError(f"cannot download {entry['filename']}: {exc}") from None
    if hashlib.sha256(data).hexdigest() != sha:
        raise InputError(f"{entry['filename']} does not match the index's sha256")
    folder.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    part.write_bytes(data)
    os.replace(part, dest)
    return dest


def unpack(archive: Path, dest: Path) -> Path:
    """Unpack the sdist ``archive`` into ``dest``; return its top folder. Members that
    would land outside ``dest`` (absolute paths, ``..``, links) are refused by tarfile's
    ``data`` filter.

    Raises:
        InputError: not a readable tar.gz, or an unsafe member.
    """
    try:
        with tarfile.open(archive, "r:gz") as tar:
            tops = {Path(m.name).parts[0] for m in tar.getmembers() if m.name}
            tar.extractall(dest, filter="data")
    except (OSError, tarfile.TarError) as exc:
        raise InputError(f"cannot unpack {archive}: {exc}") from None
    if len(tops) != 1:
        raise InputError(f"{archive} is not an sdist (top folders: {sorted(tops)[:3]})")
    return dest / tops.pop()
