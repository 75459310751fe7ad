"""Python source pieces that repro snippets are built from."""

from __future__ import annotations

import textwrap


def python_list(name: str, items: list[str], width: int = 92) -> str:
    """``name = [...]`` as Python source lines (``\\n``-terminated), the items' reprs wrapped
    at ``width`` columns."""
    if not items:
        return f"{name} = []\n"
    body = textwrap.fill(", ".join(repr(i) for i in items), width, initial_indent="    ",
                         subsequent_indent="    ")
    return f"{name} = [\n{body},\n]\n"
