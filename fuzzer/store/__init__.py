"""The output folder on disk: bundle folders written atomically, meta.json read and written
under a lock as one typed record (:class:`fuzzer.store.meta.BundleMeta`), damaged bundles
skipped and counted, npz archives of feeds and outputs, and the versions a finding depends on.

In: bundle files and meta.json updates. Out: the bundles of a folder, their metadata and
the test case each holds. Nothing here runs a model.
"""
