"""Code coverage of the target's own code: per-case branch edges read in the workers
(``collector``, ``python_edges``, ``gcda``), the set-up a sandbox hands its workers
(``setup``), line and branch coverage per source file (``summary``).

In: a coverage build (:mod:`fuzzer.builds`) or a target that reports its own edges. Out: edge
features per case (``CaseResult.edges``) and per-file coverage tables. The runs that
measure a campaign's coverage with them are :mod:`fuzzer.campaign.code_coverage`'s.
"""
