"""The README.md of a campaign folder: how to read the folder, for whoever opens it later.
Written once, when the campaign starts; never overwritten (not on ``--resume``, nor over a
README.md the folder already has).
"""

from __future__ import annotations

from pathlib import Path

from fuzzer.store.folder import write_atomic

README_FILE = "README.md"

_TEXT = """\
# optfuzz campaign

This folder holds the findings of an optfuzz campaign, one folder (bundle) per root cause.

- `optfuzz triage {folder}` lists the bundles, new first, then by severity and hits.
- A bundle `<symptom>-<hash>/` holds `report.md` (an issue draft for the optimizer's
  maintainers), `repro.py` (`python repro.py` exits 1 while the bug reproduces, 0 once it is
  fixed), `model.onnx` (the minimized model; `original.onnx` is the model as found,
  `inputs.npz` its inputs) and `meta.json` (target, configuration, responsible passes,
  versions, hits).
- `pending/` holds findings the campaign's end left unreduced: `optfuzz triage --pending
  {folder}` finishes them.
- `campaign.json` records the settings, where and with what versions each run ran, and the
  counters; `summary.html` shows them; `campaign.log` is the campaign's log. `optfuzz fuzz
  --resume --out {folder}` continues the campaign.

To report a bug: `optfuzz report {folder}/<bundle>` runs it again and rewrites `report.md`
and `repro.py`, and writes `<bundle>.zip`; open an issue with `report.md` as its text and
attach the zip.
"""


def write_readme(folder: Path, shown_as: str) -> bool:
    """Write ``folder/README.md`` (its commands name the folder ``shown_as``, as the user
    gave it) unless the folder has one; return whether it was written.

    Raises:
        OSError: it cannot be written.
    """
    path = folder / README_FILE
    if path.exists():
        return False
    write_atomic(path, _TEXT.format(folder=shown_as).encode())
    return True
