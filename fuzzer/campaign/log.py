"""A campaign's own log, ``<out>/campaign.log``: one line per event a person reading the
folder in the morning wants (each run's start and end, new bundles, findings that could not
be recorded, worker pools replaced, progress every :data:`PROGRESS_SECONDS`), rotated at
:data:`LOG_BYTES` into :data:`LOG_BACKUPS` older files (``campaign.log.1``, ...), so that a
campaign of any length keeps at most ``(LOG_BACKUPS + 1) * LOG_BYTES`` bytes of log.

A line that cannot be written (a full disk) is dropped silently: the campaign's own writes
(bundles, campaign.json) notice a full disk and stop it.
"""

from __future__ import annotations

import logging
import time
from logging.handlers import RotatingFileHandler
from pathlib import Path

LOG_FILE = "campaign.log"
LOG_BYTES = 1 << 20
LOG_BACKUPS = 2
#: seconds between two progress lines.
PROGRESS_SECONDS = 600.0


class _Handler(RotatingFileHandler):
    """Rotating file handler that drops a line it cannot write instead of printing a
    traceback to the campaign's terminal."""

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 (logging's name)
        pass


def open_log(folder: Path) -> logging.Logger:
    """The logger of the campaign in ``folder``, writing ``campaign.log`` there (UTC times).

    Raises:
        OSError: the log file cannot be opened.
    """
    logger = logging.getLogger(f"optfuzz.campaign.{Path(folder).resolve()}")
    logger.setLevel(logging.INFO)
    logger.propagate = False
    close_log(logger)
    handler = _Handler(Path(folder) / LOG_FILE, maxBytes=LOG_BYTES, backupCount=LOG_BACKUPS,
                       encoding="utf-8")
    formatter = logging.Formatter("%(asctime)s %(message)s", "%Y-%m-%dT%H:%M:%SZ")
    formatter.converter = time.gmtime
    handler.setFormatter(formatter)
    logger.addHandler(handler)
    return logger


def close_log(logger: logging.Logger) -> None:
    """Close and detach every handler of ``logger``."""
    for handler in list(logger.handlers):
        handler.close()
        logger.removeHandler(handler)
