"""The library's log lines go through Python's logging (logger "rangefs"),
and a watch's repeated warning while etcd is down is one line a minute
(base/logging.h's repeat limit), not ~2 a second."""

from __future__ import annotations

import collections
import logging
import os
import signal
import time

from conftest import start_cluster, stop_cluster, wait_until


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def warnings(self):
        return [r for r in self.records if r.levelno >= logging.WARNING]


def test_warnings_while_etcd_is_down_are_rate_limited(capfd):
    handler = Records()
    logger = logging.getLogger("rangefs")
    logger.addHandler(handler)
    c = start_cluster("logs", 1)
    try:
        client = c.client()
        client.ls("/")
        for pid in c.etcd_pids():
            os.kill(pid, signal.SIGKILL)
        wait_until(lambda: handler.warnings(), 120, "a warning from the library")
        # Unlimited, each watch warns ~2 times a second; watch 5 s.
        time.sleep(5)
        lines = [r.getMessage() for r in handler.warnings()]
        per_line = collections.Counter((r.pathname, r.lineno, r.getMessage())
                                       for r in handler.warnings())
        assert max(per_line.values()) == 1, "\n".join(lines)
        assert len(lines) <= 10, "\n".join(lines)
        r = handler.warnings()[0]
        assert r.name == "rangefs" and r.pathname.endswith(".cc") and r.lineno > 0
        assert abs(r.created - time.time()) < 120
        # Forwarded, not written to stderr by the C++ logger as well.
        err = capfd.readouterr().err
        assert r.getMessage() not in err, err
        client.close()
    finally:
        logger.removeHandler(handler)
        stop_cluster(c)
