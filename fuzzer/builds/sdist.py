"""Source distributions from the package index, fetched by pip and unpacked safely.

``pip download --no-deps --no-binary :all: NAME==VERSION`` runs in a child process
(:mod:`fuzzer.pipdownload`), so the user's pip configuration applies (index, proxies,
certificates) and pip checks the sha256 the index publishes; as for any sdist, pip prepares
its metadata (in an isolated build environment, as ``pip install`` would). A local archive
(``--sdist PATH``) skips the index.
"""

from __future__ import annotations

import tarfile
from collections.abc import Sequence
from pathlib import Path

from fuzzer.errors import InputError
from fuzzer.pipdownload import pip_download


def sdist_name(project: str, version: str) -> str:
    """The sdist file name of ``project`` at ``version`` (PEP 625: normalized name)."""
    return f"{project.replace('-', '_')}-{version}.tar.gz"


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
        pip_download(requirement, folder, ["--no-binary", ":all:", *pip_options])
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
