"""Delta debugging over ordered lists: the one ddmin of optfuzz (Zeller & Hildebrandt, IEEE TSE
28(2), 2002) and a bisection for single causes.

In: a sequence (pass names, node indices, output names) and a predicate "this subsequence
still fails". Out: a small subsequence that still fails. Localization searches pass lists
with it; the reducer searches nodes and graph outputs.
"""
