"""Marking a bundle (``optfuzz mark``): a maintainer's words turned into the bundle's state
record (:mod:`fuzzer.store.bundle_state`) and written into its meta.json under the folder's
lock, so a campaign running in the folder meanwhile keeps it.

Words: ``reported URL`` (an http or https URL), ``duplicate-of OTHER`` (another bundle of the
same folder, by id or path), ``invalid REASON`` (the rest of the words), ``fixed VERSION``,
``open``. The record set before moves into the new one's history.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from fuzzer.errors import InputError
from fuzzer.store.bundle_state import (
    DUPLICATE,
    FIXED,
    INVALID,
    OPEN,
    REGRESSED,
    REPORTED,
    BundleState,
    marked,
)
from fuzzer.store.folder import BundleStore, DamagedBundleError
from fuzzer.store.meta import BundleMeta
from fuzzer.store.versions import utc_now

#: ``by`` of the records this module writes.
BY = "optfuzz mark"
#: command word -> (state, what its argument is; None: it takes none).
WORDS: dict[str, tuple[str, str | None]] = {
    "reported": (REPORTED, "URL"), "duplicate-of": (DUPLICATE, "OTHER"),
    "invalid": (INVALID, "REASON"), "fixed": (FIXED, "VERSION"), "open": (OPEN, None)}
USAGE = " | ".join(f"{word} {arg}" if arg else word for word, (_, arg) in WORDS.items())


def parse_words(words: list[str]) -> tuple[str, str | None]:
    """``(state, argument)`` of the words after ``optfuzz mark BUNDLE``: the argument is the
    one word after the state's, the rest of the words for ``invalid``, None for ``open``.

    Raises:
        InputError: no words, an unknown word, a missing, empty or extra argument.
    """
    if not words:
        raise InputError(f"say the state: {USAGE}")
    word, rest = words[0], words[1:]
    if word not in WORDS:
        raise InputError(f"unknown state {word!r}; one of: {USAGE}")
    state, argument = WORDS[word]
    if argument is None:
        if rest:
            raise InputError(f"{word} takes no argument (got {' '.join(rest)!r})")
        return state, None
    if state == INVALID:
        rest = [" ".join(rest)] if rest else []
    if not rest or not rest[0].strip():
        raise InputError(f"{word} needs {argument}")
    if len(rest) > 1:
        raise InputError(f"{word} takes one {argument} (got {' '.join(rest)!r})")
    value = rest[0].strip()
    if "\n" in value or (state != INVALID and any(c.isspace() for c in value)):
        raise InputError(f"{word}: {argument} {value!r} has white space in it")
    return state, value


def check_url(url: str) -> str:
    """``url`` where it is an http or https URL with a host.

    Raises:
        InputError: it is not.
    """
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:  # a bad port or bracketed host
        host, parts = None, None
    if parts is None or parts.scheme not in ("http", "https") or not host:
        raise InputError(f"malformed URL {url!r}: expected http(s)://host/...")
    return url


def other_bundle(store: BundleStore, bundle_id: str, other: str) -> str:
    """The id of bundle ``other`` (an id, or a path to a bundle folder) of ``store``, which a
    bundle ``bundle_id`` duplicates.

    Raises:
        InputError: ``other`` is ``bundle_id`` itself, lies in another folder, or is no
            readable bundle of ``store``.
    """
    path = Path(other)
    name = path.name
    if len(path.parts) > 1 and path.resolve().parent != store.root.resolve():
        raise InputError(f"duplicate-of {other}: not a bundle of {store.root}")
    if name == bundle_id:
        raise InputError(f"{bundle_id} cannot be a duplicate of itself")
    try:
        store.read(name)
    except DamagedBundleError as exc:
        why = "no such bundle" if not store.path(name).is_dir() else str(exc)
        raise InputError(f"duplicate-of {other}: {why} in {store.root}") from None
    return name


def mark_bundle(bundle: Path, words: list[str], when: str | None = None) -> BundleState:
    """Set the state of the bundle at folder ``bundle`` from ``words`` (see
    :func:`parse_words`) at ``when`` (ISO UTC, default now); return the new record.

    Raises:
        InputError: the folder is no bundle or a damaged one, or the words are bad
            (:func:`parse_words`, :func:`check_url`, :func:`other_bundle`).
        OSError: meta.json cannot be written.
    """
    if not (bundle / "meta.json").is_file():
        raise InputError(f"{bundle}: not a bundle (no meta.json)")
    state, value = parse_words(words)
    folder = bundle.resolve()
    store = BundleStore(folder.parent)
    if state == REPORTED:
        value = check_url(value or "")
    elif state == DUPLICATE:
        value = other_bundle(store, folder.name, value or "")
    when = when or utc_now()
    records: list[BundleState] = []

    def change(meta: BundleMeta) -> None:
        meta.state = marked(meta.state, state, value, when, BY)
        records.append(meta.state)

    try:
        store.update(folder.name, change)
    except DamagedBundleError as exc:
        raise InputError(f"{bundle}: damaged bundle ({exc})") from None
    return records[-1]


def state_text(record: BundleState | None) -> str:
    """The state of a bundle in a few words: ``open``, ``reported <url>``, ``duplicate of
    <id>``, ``invalid: <reason>``, ``fixed in <version>``, ``regressed in <version> (fixed in
    <version>)``."""
    if record is None:
        return OPEN
    value = record.value
    return {OPEN: OPEN, REPORTED: f"reported {value}", DUPLICATE: f"duplicate of {value}",
            INVALID: f"invalid: {value}", FIXED: f"fixed in {value}",
            REGRESSED: f"regressed in {value or 'an unknown version'} (fixed in "
                       f"{record.fixed})"}[record.state]
