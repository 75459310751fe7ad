"""What a sandbox's workers inherit: the modules imported, and onnxruntime's and onnx's
registries built, in the calling process (or the fork server) before any worker starts, so
that a new worker neither spends its first cases importing nor waits on an import lock
another thread of the caller held when it forked.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence

from fuzzer.execution.case import SOURCE_KINDS

#: modules the fork server imports once, so its workers start warm.
FORKSERVER_PRELOAD = ("onnx", "onnxruntime", "fuzzer.execution.worker", "fuzzer.targets")
#: modules a worker imports lazily (and every oracle, :func:`oracles.load_oracles`), imported
#: by the caller before any worker forks. A worker forked while another thread of the caller
#: was importing one of them would wait forever on that module's import lock (the lock is
#: copied held into the child): a pool silently a worker short, or cases lost as timeouts.
FORK_PRELOAD = ("fuzzer.modelio.load", "fuzzer.modelio.repeat", "fuzzer.execution.scaling",
                "generators.inputs", "statistics")
#: what a worker imports to build a campaign's cases: the generator and its motifs, the
#: modules it imports lazily (numpy.random, secrets), and every materializer
#: (:data:`fuzzer.execution.case.SOURCE_KINDS`). A campaign's sandbox
#: imports them before its workers fork (``Sandbox(preload=CASE_PRELOAD)``), so that a
#: worker replaced after :data:`fuzzer.execution.sandbox.MAX_TASKS` cases does not spend its
#: first case importing them (140 ms instead of 33 ms on a machine that compiles every module
#: afresh); a one-shot command's sandbox (``optfuzz reduce``) does not pay for them.
CASE_PRELOAD = ("generators.generate", "numpy.random", "secrets",
                *(kind.split(":")[0] for kind in SOURCE_KINDS.values()))


def import_before_fork(more: Sequence[str] = ()) -> None:
    """Import :data:`FORK_PRELOAD`, ``more`` and every oracle in this process, and build
    onnxruntime's and onnx's registries (:func:`fuzzer.execution.reference.warm_up`), for
    the workers about to fork from it: a fresh worker's first cases cost about 15 ms of
    CPU more than the same cases again, not 60 ms.

    Raises:
        ImportError: a module of ``more`` cannot be imported.
    """
    from fuzzer.execution.reference import warm_up
    from oracles import load_oracles

    for name in (*FORK_PRELOAD, *more):
        importlib.import_module(name)
    load_oracles()
    warm_up()
