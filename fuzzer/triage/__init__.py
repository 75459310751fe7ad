"""Triage of a campaign folder: one row per bundle with its status under the installed
versions, what is new since the previous triage, replay of every bundle, and re-bucketing of
a folder an earlier optfuzz wrote (``optfuzz triage --rebucket``).

In: a folder of bundles (and, for replay and re-bucketing, a sandbox). Out: rows and tables
for a person, JSON for tools, the ``replay`` record written into each bundle's meta.json, and
(re-bucketed) one bundle per root cause.
"""
