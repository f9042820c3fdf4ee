"""The client library's log lines through Python's ``logging``.

The C++ library (base/logging.h) logs on its own threads; the extension
queues each line and one forwarding thread hands it here with the GIL
(python/src/log_forwarder.h). Records go to the ``rangefs`` logger with
the C++ file, line and time, so ``logging.basicConfig`` or
``logging.getLogger("rangefs").setLevel(logging.ERROR)`` governs them like
any other library's. With no handler configured, Python's last-resort
handler prints WARNING and above on stderr. Repeated identical warnings
(a watch reconnecting while etcd is down) arrive once a minute per call
site and text: the C++ logger rate-limits them.
"""

from __future__ import annotations

import atexit
import logging

from rangefs import _rangefs

logger = logging.getLogger("rangefs")


def _emit(level: int, file: str, line: int, message: str, unix_time: float) -> None:
    if not logger.isEnabledFor(level):
        return
    record = logger.makeRecord(logger.name, level, file, line, message, (), None)
    record.created = unix_time
    record.msecs = (unix_time - int(unix_time)) * 1000
    logger.handle(record)


def install() -> None:
    """Starts forwarding (on import of rangefs); stops at interpreter exit,
    before the forwarding thread could outlive the interpreter."""
    _rangefs._start_log_forwarding(_emit)
    atexit.register(_rangefs._stop_log_forwarding)
