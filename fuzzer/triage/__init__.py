"""Triage of a campaign folder: one row per bundle with its status under the installed
versions, what is new since the previous triage, and replay of every bundle.

In: a folder of bundles (and, for replay, a sandbox). Out: rows and tables for a person,
JSON for tools, and the ``replay`` record written into each bundle's meta.json.
"""
