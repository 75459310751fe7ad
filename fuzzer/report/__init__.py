"""The upstream issue report of a bundle: pictures of the graph before and after the target,
expected vs actual, a short standalone repro and an attachment zip (``optfuzz report``)."""
