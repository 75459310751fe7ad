"""The one registry mechanism: name -> item, in the order items were registered.

Every registry of optfuzz (targets, symptoms, corpus sources, mutators, reduction steps,
commands, ...) is a :class:`Registry` owned by the module whose concept it lists; only the
mechanism is shared. A registry may also take the items that installed distributions declare
in an entry-point group (:mod:`importlib.metadata`): they are read on first use, after the
built-in items, and a plugin that cannot be loaded is left out with one warning line.

This module imports nothing of optfuzz (the lowest layer): the oracles' symptom registry is
built on it, and repro.py carries it verbatim with the oracle modules.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping
from typing import Any, TypeVar, overload

T = TypeVar("T")

_MISSING: Any = object()


class UnknownName(KeyError):
    """A name that a :class:`Registry` does not hold. A ``KeyError`` (the mapping protocol)
    whose text is the message itself, one line naming the known names."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def warn_line(text: str) -> None:
    """Write ``warning: <text>`` as one line to stderr."""
    print(f"warning: {text}", file=sys.stderr)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else "(no message)"


def _load_entry_point(point: Any) -> Any:
    return point.load()


class Registry(MutableMapping[str, T]):
    """Items of one kind by name, in registration order (built-in items, then plugins).

    Args:
        kind: what an item is, in messages (``"target"``, ``"corpus source"``).
        items: the built-in items (name -> item), registered in their order.
        group: an entry-point group whose entry points add items (None: no plugins). They
            are read on the first lookup, iteration or count, once per process
            (:meth:`rediscover` reads them again).
        load: the item of an entry point (default ``point.load()``); raising any error
            leaves the plugin out with one warning line.
        warn: where such a warning goes (default: one ``warning: ...`` line on stderr).

    The mapping protocol holds: ``registry[name]``, ``name in registry``, ``len``,
    iteration over names, ``.items()``. ``registry[name] = item`` replaces or adds an item
    and ``del registry[name]`` drops one (for tests); :meth:`register` refuses a name
    already taken.

    Raises:
        UnknownName: ``registry[name]``, :meth:`get` without a default or ``del`` of a name
            it does not hold (a ``KeyError`` whose message lists the known names).
        ValueError: :meth:`register` of a name it holds.
    """

    def __init__(self, kind: str, items: Mapping[str, T] | None = None, *,
                 group: str | None = None, load: Callable[[Any], T] | None = None,
                 warn: Callable[[str], None] | None = None) -> None:
        self.kind = kind
        self.group = group
        self._load = load or _load_entry_point
        self._warn = warn or warn_line
        self._builtin: dict[str, T] = dict(items or {})
        self._plugins: dict[str, tuple[Any, T]] | None = None if group else {}

    @overload
    def register(self, name: str) -> Callable[[T], T]: ...

    @overload
    def register(self, name: str, item: T) -> T: ...

    def register(self, name: str, item: T = _MISSING) -> T | Callable[[T], T]:
        """Add ``item`` under ``name`` and return it; without ``item``, a decorator that
        does so (``@registry.register("name")``).

        Raises:
            ValueError: ``name`` is already registered.
        """
        def add(value: T) -> T:
            if name in self._builtin:
                raise ValueError(f"{self.kind} {name!r} registered twice")
            self._builtin[name] = value
            return value

        return add if item is _MISSING else add(item)

    def get(self, name: str, default: Any = _MISSING) -> Any:
        """The item called ``name``; with ``default`` given, that for an unknown name.

        Raises:
            UnknownName: an unknown name and no default (the message lists the known
                names).
        """
        try:
            return self[name]
        except UnknownName:
            if default is _MISSING:
                raise
            return default

    def names(self) -> list[str]:
        """Every name, in registration order (built-in items, then plugins)."""
        return list(self)

    def unknown(self, name: str) -> UnknownName:
        """The error for an unknown ``name``: ``unknown <kind> 'name'; known: a, b``."""
        return UnknownName(f"unknown {self.kind} {name!r}; known: "
                           f"{', '.join(sorted(self))}")

    def builtin(self, name: str) -> bool:
        """Whether ``name`` is a built-in item (registered in code, not by a plugin)."""
        return name in self._builtin

    def plugin(self, name: str) -> Any | None:
        """The entry point that added item ``name`` (None: a built-in or unknown name)."""
        entry = self._discovered().get(name)
        return entry[0] if entry else None

    def rediscover(self) -> None:
        """Forget the plugins read so far; the next use reads the entry points again."""
        if self.group:
            self._plugins = None

    def _discovered(self) -> dict[str, tuple[Any, T]]:
        """Plugin name -> (entry point, item), read on first call. A plugin named like a
        built-in item, or whose item cannot be loaded, is left out with one warning."""
        if self._plugins is None:
            import importlib.metadata

            self._plugins = {}
            for point in importlib.metadata.entry_points(group=self.group):
                if point.name in self._builtin:
                    self._warn(f"{self.kind} plugin {point.name!r} ({point.value}) is left "
                               f"out: a built-in {self.kind} has that name")
                    continue
                if point.name in self._plugins:
                    continue
                try:
                    item = self._load(point)
                except Exception as exc:  # noqa: BLE001 - a broken plugin must not stop us
                    self._warn(f"{self.kind} plugin {point.name!r} ({point.value}) is left "
                               f"out: {type(exc).__name__}: {_first_line(exc)}")
                    continue
                self._plugins[point.name] = (point, item)
        return self._plugins

    def __getitem__(self, name: str) -> T:
        if name in self._builtin:
            return self._builtin[name]
        entry = self._discovered().get(name)
        if entry is None:
            raise self.unknown(name)
        return entry[1]

    def __setitem__(self, name: str, item: T) -> None:
        self._builtin[name] = item

    def __delitem__(self, name: str) -> None:
        if name not in self._builtin:
            raise self.unknown(name)
        del self._builtin[name]

    def __contains__(self, name: object) -> bool:
        return name in self._builtin or name in self._discovered()

    def __iter__(self) -> Iterator[str]:
        yield from self._builtin
        yield from (n for n in self._discovered() if n not in self._builtin)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {self.names()!r})"


def registry_of(kind: str, items: Iterable[tuple[str, T]]) -> Registry[T]:
    """A registry of ``kind`` holding ``items`` (``(name, item)`` pairs) in their order.

    Raises:
        ValueError: two items share a name.
    """
    out: Registry[T] = Registry(kind)
    for name, item in items:
        out.register(name, item)
    return out
