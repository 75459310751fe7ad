"""Bundles checked against other builds of their target than the installed one.

In: bundles and SPECs (a released version ``onnxslim==0.1.80``, a wheel or sdist file, a
source checkout). Out: verdicts in meta.json (``upstream`` for ``optfuzz replay --against``,
``regression`` for ``optfuzz bisect``).

Data flow: :mod:`~fuzzer.upstream.spec` parses a SPEC, :mod:`~fuzzer.upstream.releases`
lists a package's released versions, :mod:`~fuzzer.upstream.environments` installs a SPEC
into a cached environment of its own (running :mod:`~fuzzer.upstream.probe` there),
:mod:`~fuzzer.upstream.verdict` runs a bundle's repro.py in it, :mod:`~fuzzer.upstream.checks`
ties these together per (bundle, SPEC), :mod:`~fuzzer.upstream.bisect` searches releases for
the first bad and first fixed one, and :mod:`~fuzzer.upstream.records` writes the results.
"""
