"""summary.html plots root causes on their own chart, lists one row per root cause linked to
its report.md, and shows the documented behaviour that was counted instead of bundled."""

from __future__ import annotations

import re
from pathlib import Path

from fuzzer.campaign.summary import write_summary
from tests.schema2_bundles import if_model, write_bundle

#: 46,000 findings that make 3 root causes: on a shared axis the root causes look flat at 0.
STATS = {
    "seed": 1, "target": "fake", "elapsed_s": 600.0, "cases": 90000, "usable": 90000,
    "findings": {"output-mismatch": 46000}, "bundles_new": 3, "hits": 45997,
    "documented": {"fake-dead-ends": 120, "ir-version-upgrade": 7},
    "timeline": [{"t": 60.0, "cases": 9000, "findings": 4000, "bundles": 1},
                 {"t": 300.0, "cases": 45000, "findings": 23000, "bundles": 2},
                 {"t": 600.0, "cases": 90000, "findings": 46000, "bundles": 3}],
}


def charts(text: str) -> dict[str, str]:
    """Chart title -> its SVG text."""
    found = {}
    for svg in re.findall(r"<svg.*?</svg>", text, flags=re.S):
        for title in ("Findings over time", "Root causes over time", "Throughput over time"):
            if title in svg:
                found[title] = svg
    return found


def test_root_causes_have_their_own_chart(tmp_path: Path) -> None:
    text = write_summary(tmp_path, STATS).read_text()
    svgs = charts(text)
    roots, found = svgs["Root causes over time"], svgs["Findings over time"]
    assert roots is not found
    assert "root causes (bundles)" in roots and "Findings over time" not in roots
    assert "root causes" not in found.replace("Root causes", "")  # no second line there


def test_root_causes_are_listed_with_links_and_documented_behaviour(tmp_path: Path) -> None:
    write_bundle(tmp_path, "bloat-000000b1", hits=400, breaking_pass="bloat",
                 responsible_passes=["bloat"], enabling_passes=[])
    write_bundle(tmp_path, "output-mismatch-000000a1", hits=3, variants=["v1.onnx"],
                 breaking_pass="drop-node", responsible_passes=["nop-1", "drop-node"],
                 enabling_passes=["nop-1"], trigger="when the last node is unary",
                 model=if_model(branch_ops=2), nodes={"original": 40, "minimized": 1})
    text = write_summary(tmp_path, STATS).read_text()
    listing = text.split("<h2>Root causes (2)</h2>")[1].split("</table>")[0]
    rows = re.findall(r"<tr>(.*?)</tr>", listing)
    assert len(rows) == 3  # header and two bundles
    first, second = rows[1], rows[2]  # wrong output before size, whatever the hits
    assert '<a href="output-mismatch-000000a1/report.md">' in first
    for cell in ("drop-node + nop-1", "output-mismatch", "<td class=num>3</td>",
                 "<td class=num>1</td>", "when the last node is unary", "40 &rarr; 5"):
        assert cell in first
    assert '<a href="bloat-000000b1/report.md">' in second and "<td>bloat</td>" in second
    documented = text.split("<h2>Documented behaviour (not bundled)</h2>")[1]
    assert "<td>fake-dead-ends</td><td class=num>120</td>" in documented
    assert "<td>ir-version-upgrade</td><td class=num>7</td>" in documented


def test_no_documented_table_without_documented_behaviour(tmp_path: Path) -> None:
    stats = {k: v for k, v in STATS.items() if k != "documented"}
    assert "Documented behaviour" not in write_summary(tmp_path, stats).read_text()
