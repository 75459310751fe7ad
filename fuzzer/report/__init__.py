"""The upstream issue report of a bundle: pictures of the graph before and after the target,
expected vs actual, a short standalone repro and an attachment zip (``optfuzz report``);
:func:`fuzzer.report.refresh.refresh_report` words a bundle's report.md again from its
current meta.json without running anything."""
