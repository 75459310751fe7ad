"""The zip to attach to the upstream issue: model.onnx, inputs.npz, repro.py (the short
script of report.md) and, where one exists, optimized.onnx."""

from __future__ import annotations

import zipfile
from pathlib import Path

#: bundle files copied into the zip when present.
ATTACHED = ("model.onnx", "inputs.npz", "optimized.onnx")


def write_attachment(bundle: Path, repro: str, out: Path) -> Path:
    """Write the zip ``out`` from the bundle folder ``bundle`` and the repro text.

    Raises:
        FileNotFoundError: the bundle lacks model.onnx or inputs.npz.
    """
    for required in ATTACHED[:2]:
        if not (bundle / required).is_file():
            raise FileNotFoundError(bundle / required)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name in ATTACHED:
            if (bundle / name).is_file():
                archive.write(bundle / name, name)
        archive.writestr("repro.py", repro)
    tmp.replace(out)
    return out
