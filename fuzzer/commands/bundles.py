"""The bundles a command works on: a campaign folder's or one bundle's, narrowed by the
selection options (``--symptom``, ``--pass``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from fuzzer.errors import InputError
from fuzzer.store.folder import BundleStore, DamagedBundle, DamagedBundleError
from fuzzer.store.meta import META_FILE, BundleMeta


@dataclass
class Selection:
    """Bundles to work on.

    Attributes:
        store: the folder that holds them.
        metas: their metadata, in id order.
        damaged: bundles of the folder that cannot be read (skipped).
    """

    store: BundleStore
    metas: list[BundleMeta]
    damaged: list[DamagedBundle]


def select_bundles(path: Path, symptom: str | None = None,
                   pass_name: str | None = None) -> Selection:
    """The bundles at ``path`` (a campaign folder, or one bundle's folder with meta.json)
    that show ``symptom`` and involve ``pass_name`` (where given).

    Raises:
        InputError: ``path`` is not a folder, the one bundle named is damaged, the symptom
            is unknown, or a bundle names a target not registered here.
    """
    from fuzzer.commands import options
    from fuzzer.targets import target_names
    from fuzzer.triage.rows import TriageFilter

    if not path.is_dir():
        raise InputError(f"{path}: not a folder")
    options.check_symptom(symptom)
    if (path / META_FILE).is_file():
        store = BundleStore(path.resolve().parent)
        try:
            metas, damaged = [store.read(path.resolve().name)], []
        except DamagedBundleError as exc:
            raise InputError(f"{path}: damaged bundle ({exc})") from None
    else:
        store = BundleStore(path)
        metas, damaged = store.read_all()
    keep = TriageFilter(symptom, pass_name)
    metas = [m for m in metas if keep.accepts(m)]
    unknown = sorted({m.target.name for m in metas} - set(target_names()))
    if unknown:
        raise InputError(f"bundles name unknown target(s) {unknown}")
    return Selection(store, metas, damaged)
