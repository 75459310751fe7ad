"""The inliner target's motif families, registered through the ``optfuzz.motifs``
entry-point group (see pyproject.toml): the generator's library discovers every module here
that exports ``MOTIFS``, as it discovers its own (:mod:`generators.motifs`)."""
