"""What makes two findings the same bug: normalized messages, signatures, the graph footprint
of a rewrite, and the lookup of the bundle that already records a signature.

In: findings (:class:`oracles.base.Finding`) with the case and runs that showed them. Out:
signature strings, bundle ids, and the id of a known bundle, if any.
"""
