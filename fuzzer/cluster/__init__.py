"""Campaigns across machines on Ray (``optfuzz fuzz --ray``): long-lived actors run
deterministic ranges of cases through the same sandbox as local campaigns; the driver alone
writes ``crashes/``; localization and reduction of findings run on the cluster."""
