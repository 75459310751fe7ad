"""Source distributions from the package index, fetched by pip and unpacked safely.

``pip download --no-deps --no-binary NAME NAME==VERSION`` runs in a child process
(:mod:`fuzzer.pipdownload`), so the user's pip configuration applies (index, proxies,
certificates) and pip checks the sha256 the index publishes; as for any sdist, pip prepares
its metadata (in an isolated build environment, as ``pip install`` would), with the build's
own requirements as wheels: ``--no-binary :all:`` would compile those too (onnxoptimizer's
``cmake`` from source, for a quarter of an hour on two cores). A local archive
(``--sdist PATH``) skips the index. :func:`index_files` reads a project's file list (every
version's wheels and sdists, with their tags, yanked marks and Python requirements) from the
index's JSON simple API (PEP 691), which pip has no command to print.
"""

from __future__ import annotations

import json
import tarfile
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from fuzzer.errors import InputError
from fuzzer.pipdownload import pip_download

#: the index whose file list :func:`index_files` reads (PEP 691 JSON simple API).
DEFAULT_INDEX = "https://pypi.org/simple/"
_ACCEPT = "application/vnd.pypi.simple.v1+json"
TIMEOUT = 120.0  # seconds per request


def sdist_name(project: str, version: str) -> str:
    """The sdist file name of ``project`` at ``version`` (PEP 625: normalized name)."""
    return f"{project.replace('-', '_')}-{version}.tar.gz"


def index_files(project: str, index: str = DEFAULT_INDEX) -> list[dict]:
    """The file entries the index lists for ``project`` (PEP 691: ``filename``, ``url``,
    ``hashes``, ``yanked``, ``requires-python`` ...), every version's.

    Raises:
        InputError: the index cannot be reached or does not answer in that format.
    """
    url = index.rstrip("/") + f"/{project}/"
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers={"Accept": _ACCEPT}),
                                    timeout=TIMEOUT) as resp:
            return list(json.load(resp)["files"])
    except (OSError, urllib.error.URLError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"cannot list {project} on {index}: {exc}") from None


def fetch_sdist(project: str, version: str, folder: Path,
                pip_options: Sequence[str] = ()) -> Path:
    """Download the sdist of ``project==version`` into ``folder`` with pip (kept there as a
    cache: pip does not fetch again an archive already there that matches the index).

    Args:
        pip_options: more options for pip, e.g. ``["--index-url", URL]``.

    Raises:
        InputError: pip failed (no network, no sdist of that version, a download that does
            not match the index's sha256), or left no sdist of that name.
    """
    requirement = f"{project}=={version}"
    try:
        pip_download(requirement, folder, ["--no-binary", project, *pip_options])
    except InputError as exc:
        raise InputError(f"{exc}; pass --sdist PATH to build from an archive you have") \
            from None
    for name in (sdist_name(project, version), f"{project}-{version}.tar.gz"):
        if (folder / name).is_file():
            return folder / name
    raise InputError(f"pip download {requirement} left no sdist in {folder}")


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
