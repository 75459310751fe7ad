"""What happens to one finding, step by step, as ClusterFuzz's tasks each update one testcase:
each step takes what the one before it passed on (the case and its result, then a
:class:`fuzzer.handling.screen.Screened`, then a :class:`fuzzer.handling.minimize.Minimal`)
and either passes it on or ends the finding with an outcome
(:class:`fuzzer.handling.outcome.Handled`).

1. **Screen**, on the model as found: documented behaviour ends it; a hang or a slow run
   must recur; a slow finding is scaled down; localization and the preliminary root-cause
   key, whose known bundle counts a hit (a key that failed before is backed off).
2. **Determinism**: the original's reference outputs are the same on a second run.
3. **Minimize <-> localize** to a fixed point, within the reduction budget.
4. **Documented and exactness screens** on the minimized model: behaviour the target
   documents, a wrong output that float64 runs explain.
5. **Probes** of what triggers the fault, within their own budget.
6. **Key** on the minimized model: a known root cause becomes a variant of its bundle.
7. **Verification**: the bundle's own repro.py reproduces in a fresh process.
8. **Bundle** written (or a hit, where another writer made it first).

At a campaign's end, a new root cause that cannot be reduced and keyed in time is kept
**pending** (``pending/``) and handled in full later. A new root cause that ends without a bundle
after the costly steps is remembered by its preliminary key (the root-cause memory), and its
later findings are handled in full less and less often.

Modules, one concept each:

* :mod:`fuzzer.handling.outcome`: the policy, the outcome, the root-cause memory.
* :mod:`fuzzer.handling.screen`: screening, the quick first step (step 1).
* :mod:`fuzzer.handling.determinism`: the symptom recurs, the original is deterministic.
* :mod:`fuzzer.handling.minimize`: reduction <-> localization and the trigger probes.
* :mod:`fuzzer.handling.growth`: a ``slow`` finding's own steps (a symptom's handling).
* :mod:`fuzzer.handling.exactness`: wrong outputs that float64 runs explain.
* :mod:`fuzzer.handling.key`: the root-cause key and culprit.
* :mod:`fuzzer.handling.verify`: repro.py in a fresh process.
* :mod:`fuzzer.handling.bundle`: a bundle's meta and files, a hit on it.
* :mod:`fuzzer.handling.record`: every step in order (``handle_finding``, ``record_new``).
* :mod:`fuzzer.handling.pending`: pending findings kept at a campaign's end, and finished.
"""
