"""A fuzzing campaign: its settings, the stream of test cases, the loop that keeps the
workers busy, statistics and progress, and the three threads that hand each finding to
:mod:`fuzzer.handling`, which turns it into a bundle; and the case streams run for the
target's own code coverage (:mod:`fuzzer.campaign.code_coverage`, ``optfuzz coverage --code``).

In: :class:`fuzzer.campaign.settings.CampaignSettings`. Out: bundles in the output folder,
``campaign.json`` (settings and counters, for ``--resume``) and ``summary.html``.
"""
