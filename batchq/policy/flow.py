"""Flow control of job queues (issue 27): a rate limit (at most N jobs of a queue start in any
window of a period) and a running limit (at most N jobs of a queue run at once), across every
worker and host, decided by the database on its own clock.

Set with ``Queue.configure(queue, rate="100/m", max_running=4)`` or `batchq configure QUEUE
--rate 100/m --max-running 4`; stored on the queue's ``batchq_queue`` row.

How: workers learn which of their queues have a limit in their tick (once a second) and claim
from those, and only those, through the limited claim (batchq.stores.flow), one transaction
that locks the queue's row (limited claimers of one queue take turns), counts the starts of
the last period (batchq_queue_start) and the queue's running jobs, claims at most what the
limits allow, and records the starts, at the jobs' own processing_at. Queues without limits
keep the plain claim statement, unchanged. The window slides: a start is allowed while fewer
than N starts lie in the last period, so no window of that length, wherever it begins, holds
more than N. A worker held back by a rate limit sleeps until the next start is allowed (in
pieces of at most 5 s), or claims its other queues' jobs; held back by a running limit, it
polls at its poll interval.

Crash rules: a start counts once the claim commits, however the job ends; a worker SIGKILLed
after its claim does not give the start back (the job is run again after gc-processing, and
that run is a new start). A running job counts against max_running until it ends, or until
gc-processing puts the job of a dead worker back. A claim that never commits counts nothing.
A new or changed limit applies from the workers' next tick (within a second).
"""

from __future__ import annotations

import re

from ..core.config import parse_duration
from ..errors import ConfigError
from ..stores.flow import QueueLimits as QueueLimits  # re-exported: the store defines what it reads
from ..stores.flow import Rate as Rate
from ..stores.flow import format_period as format_period

# The limits' largest values: the columns are 32-bit integers on every backend.
MAX_LIMIT = 2_147_483_647
# "100/m": a count, a slash, then a unit ("s", "m", "h", "d", meaning one of it) or a duration.
_RATE = re.compile(r"\s*(\d+)\s*/\s*(\S.*?)\s*")
_UNITS = {"s": 1.0, "sec": 1.0, "second": 1.0, "m": 60.0, "min": 60.0, "minute": 60.0}
_UNITS |= {"h": 3600.0, "hour": 3600.0, "d": 86400.0, "day": 86400.0}
RATE_HELP = "N/PERIOD: at most N jobs start in any PERIOD (s, m, h, d or a duration as in 10s, 5m)"


def parse_rate(value: object) -> Rate:
    """A rate from "100/m", "5/10s", "1000/h" (or a Rate); ConfigError for anything else."""
    if isinstance(value, Rate):
        return check_rate(value.limit, value.period, value)
    found = _RATE.fullmatch(value) if isinstance(value, str) else None
    if found is None:
        raise ConfigError(f"bad rate {value!r}: use {RATE_HELP}, e.g. '100/m'")
    count, period_text = int(found.group(1)), found.group(2)
    period = _UNITS.get(period_text.lower())
    if period is None:
        if not period_text[0].isdigit():
            raise ConfigError(f"bad rate {value!r}: use {RATE_HELP}, e.g. '100/m'")
        period = parse_duration(period_text, f"period of rate {value!r}")
    return check_rate(count, period, value)


def check_rate(limit: int, period: float, value: object) -> Rate:
    if limit < 1:
        raise ConfigError(
            f"bad rate {value!r}: at least 1 job per period (to stop a queue, `batchq pause` it)"
        )
    if limit > MAX_LIMIT:
        raise ConfigError(f"bad rate {value!r}: at most {MAX_LIMIT} jobs per period")
    if not period > 0:
        raise ConfigError(f"bad rate {value!r}: the period must be longer than 0 s")
    return Rate(limit, float(period))


def check_max_running(value: object) -> int:
    """A running limit: a whole number from 1 (to stop a queue, pause it)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_LIMIT:
        raise ConfigError(
            f"bad max_running {value!r}: use a whole number from 1 (to stop a queue, `batchq pause` it), "
            "or None for no limit"
        )
    return value
