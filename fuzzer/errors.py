"""Errors that the CLI turns into a one-line message and exit code 2 (bad usage or input)."""


class InputError(Exception):
    """A bad argument or a model that cannot be used (corrupt, hostile, absurd).

    The CLI prints ``error: <message>`` on one line and exits with status 2.
    """
