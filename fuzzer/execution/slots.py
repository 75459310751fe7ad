"""The stage slots a sandbox shares with its workers (a ``multiprocessing`` array of signed
bytes, one slot per case handed to a worker): a worker writes into a case's slot the index in
:data:`oracles.base.STAGES` of each stage the case enters, so that the sandbox knows where a
case was when its worker died or outlived its timeout. Two values beyond the stages mark a
case of a batch that is not running.
"""

from __future__ import annotations

#: the slot of a batch's case that has not started, and of one that has ended (its result
#: travels with the batch's); a case running holds its index in STAGES.
PENDING, ENDED = -1, -2
