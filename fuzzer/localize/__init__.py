"""Localization: the minimal pass subsequence of a target configuration that still shows a
finding (screening of suspects named by cheap evidence, bisection, then ddmin).

In: a failing case, its result and finding, and a sandbox to run pass lists in. Out: a
:class:`fuzzer.localize.search.Localization` (responsible passes, runs spent, method). The
target supplies the pass names and each pass's anchor op types.
"""
