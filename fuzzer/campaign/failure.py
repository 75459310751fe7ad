"""Why a campaign had to stop before its limit: its finding thread or its worker pool died, or
the disk filled up. The campaign saves what it has and leaves a folder that ``--resume``
continues; ``optfuzz fuzz`` prints the reason on one line and exits 1."""

from __future__ import annotations

from fuzzer.store.folder import is_disk_full

RESUMABLE = "the folder is consistent, resume with --resume"


class CampaignError(Exception):
    """A campaign stopped early; the message is one line meant for the user."""


def disk_full(exc: OSError, fallback: object = "the campaign folder") -> CampaignError:
    """The error for a write that failed on a full disk (``exc.filename`` names the file,
    else ``fallback``)."""
    where = exc.filename if exc.filename is not None else fallback
    return CampaignError(f"disk full writing {where}; the folder is consistent, resume with "
                         "--resume after freeing space")


def stopped(reason: str) -> CampaignError:
    """The error for a campaign that cannot go on: ``"<reason>; the folder is consistent,
    resume with --resume"``."""
    return CampaignError(f"{reason}; {RESUMABLE}")


def as_campaign_error(exc: BaseException, what: str, fallback: object) -> CampaignError:
    """``exc`` as the reason a campaign stops: a full disk (``fallback`` names the place when
    the error names no file), or ``what`` (e.g. ``"the finding thread"``) died of ``exc``."""
    if isinstance(exc, CampaignError):
        return exc
    if isinstance(exc, OSError) and is_disk_full(exc):
        return disk_full(exc, fallback)
    text = str(exc).strip()
    first = f": {text.splitlines()[0]}" if text else ""
    return stopped(f"{what} died ({type(exc).__name__}{first})")
