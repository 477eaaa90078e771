"""`batchq consume`: call the @batchq.subscriber handlers with their subscriptions' messages.

Each subscription is a message queue of its own; a consumer takes one message from each of its
subscriptions in turn, so a backlog or a failing handler in one never starves another (a slow
handler does hold up this process: give it a `batchq consume --subscriber` of its own).

Delivery, per subscription:
  at_least_once  read with the subscription's visibility timeout, call, delete on success. On
                 an error the message stays hidden until the timeout runs out, then comes again;
                 the call that fails on its max_tries-th read archives it with the error. A
                 consumer killed mid-handler: the message comes again after the timeout (and a
                 message read more than max_tries times is archived without a call).
  at_most_once   pop (delete) first, then call: an error is logged and the message is gone; a
                 consumer killed mid-handler loses that one message.

A handler's call has a timeout as a job's has (the handler's @subscriber(timeout=...), else
`consume --timeout`), enforced by the same watchdog (timeouts.py): past it, the call is stopped
and counts as an error; a call no signal stops ends the process after the grace period (exit
status 4), so a hung handler cannot outlive --max-seconds and SIGTERM, nor cron's next consumer.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from ..backends.liveness import owner_name
from ..core.config import counted, format_duration, parse_timeout
from ..errors import BackendUnavailable, QueueNotFound
from ..jobs.calls import describe_error, timed_out_error
from ..jobs.tasks import call_task
from ..jobs.timeouts import DEFAULT_GRACE_SECONDS, WATCHDOG_EXIT_STATUS, Watch, timed_out, timeout_text
from ..mq import Message, MessageQueue
from ..mq.pubsub import AT_MOST_ONCE, Handler, Subscription, archive_failed
from ..ops.registry import Registration
from .runner import RECONNECT_ATTEMPTS, Limits, Runner

log = logging.getLogger("batchq.runtime.consumer")

REFRESH_SECONDS = 1.0  # how often the subscriptions' settings are read again


@dataclass
class ConsumeOptions:
    max_messages: int | None = None
    max_seconds: float | None = None
    wait: float | None = None  # exit after this long without a message; None: never
    poll_interval: float = 1.0
    timeout: float | str | None = None  # how long a call may run (a handler's own comes first)
    timeout_grace: float | str = DEFAULT_GRACE_SECONDS


@dataclass
class ConsumeSummary:
    handled: int = 0  # the handler returned
    failed: int = 0  # the handler raised
    archived: int = 0  # given up on (at_least_once): archived with the error
    dropped: int = 0  # failed under at_most_once: gone
    skipped: int = 0  # read more than max_tries times: archived without a call
    reconnects: int = 0

    @property
    def processed(self) -> int:
        """Messages taken (--max-messages): every call, and the messages archived without one.
        A message tried three times counts three."""
        return self.handled + self.failed + self.skipped

    @property
    def calls(self) -> int:
        """Handler calls: a message retried after a failure is called again."""
        return self.handled + self.failed

    @property
    def finished(self) -> int:
        """Messages this consumer is done with, each once: handled, archived (after its last try,
        or read too often) or dropped (at_most_once)."""
        return self.handled + self.archived + self.dropped


class Consumer:
    def __init__(
        self, mq: MessageQueue, handlers: list[Handler], options: ConsumeOptions | None = None
    ) -> None:
        self.mq = mq
        self.handlers = {(h.topic, h.subscriber): h for h in handlers}
        self.options = options or ConsumeOptions()
        self.summary = ConsumeSummary()
        self._subscriptions: list[Subscription] = []
        self._gone: set[tuple[str, str]] = set()  # unsubscribed while we ran (logged once)
        self._timeout = parse_timeout(self.options.timeout, "consume timeout")
        grace = parse_timeout(self.options.timeout_grace, "timeout grace") or DEFAULT_GRACE_SECONDS
        self._at_hand: Subscription | None = None  # the subscription of the message being handled
        self.name = owner_name()
        serves = [f"{topic}:{subscriber}" for topic, subscriber in self.handlers]
        # Alive and listed as `batchq run` is: its session's lock (its pid on SQLite), and its
        # registry row, which `batchq status` lists and `batchq stop` asks to stop.
        self._runner = Runner(
            mq.backend,
            Registration(mq.backend, self.name, serves, kind="consume"),
            self.summary,
            Limits(self.options.max_messages, self.options.max_seconds),
            grace=grace,
            heartbeat=None,
            log=log,
        )

    def stop(self, *_: object) -> None:
        """Finish the message at hand, then exit (SIGTERM, SIGINT)."""
        self._runner.stop()

    def run(self) -> ConsumeSummary:
        self._runner.run(self)
        return self.summary

    # -- the runner's loop (batchq.runtime.runner.Loop) ------------------------------------------

    def prepare(self) -> None:
        """The subscriptions, with the decorators' settings where they state them."""
        for h in self.handlers.values():
            self.mq.subscribe(h.topic, h.subscriber, policy=h.policy, max_tries=h.max_tries, vt=h.vt)

    def close(self) -> None:
        """Nothing of its own to give back: the runner unregisters it."""

    def loop(self) -> None:
        idle_since: float | None = None
        next_refresh = 0.0
        failures = 0  # connection losses in a row
        while not self._should_stop():
            try:
                if time.monotonic() >= next_refresh:
                    self._refresh()
                    next_refresh = time.monotonic() + REFRESH_SECONDS
                    if self._asked_to_stop():
                        break
                took = self._one_round()
                failures = 0
            except BackendUnavailable as exc:
                failures += 1
                if failures > RECONNECT_ATTEMPTS:
                    raise
                self.mq.close()
                self._runner.reconnect_wait(exc, failures - 1, interruptible=True)
                continue
            if took:
                idle_since = None
                continue
            idle_since = idle_since or time.monotonic()
            idle = time.monotonic() - idle_since
            if self.options.wait is not None and idle >= self.options.wait:
                break
            self.mq.backend.wait_for_messages(
                sorted({sub.topic for sub in self._subscriptions}),
                min(self._pause(idle), self.mq.backend.liveness.beat_seconds),  # a lease stays renewed
                self._runner.stopped,
            )

    def _asked_to_stop(self) -> bool:
        """Refresh the registry row; True (and logged) when `batchq stop` asked this consumer."""
        summary = self.summary
        # `failed` already counts the at_most_once failures that `dropped` counts again; the
        # messages archived unread are failures too, as the summary's 'errors' has them.
        return self._runner.asked_to_stop(summary.handled, summary.failed + summary.skipped)

    def _pause(self, idle: float) -> float:
        """The poll interval, cut short by --wait and --max-seconds."""
        pause = self.options.poll_interval
        if self.options.wait is not None:
            pause = min(pause, self.options.wait - idle)
        if self.options.max_seconds is not None:
            pause = min(pause, self.options.max_seconds - self._runner.elapsed())
        return max(pause, 0.0)

    def _should_stop(self) -> bool:
        return self._runner.should_stop()

    def _refresh(self) -> None:
        """Read the subscriptions again: their settings may have changed, or they may be gone."""
        self.mq.backend.liveness.renew_if_due()  # a lease, where the URL asks for one
        stored = {(sub.topic, sub.subscriber): sub for sub in self.mq.subscriptions()}
        self._subscriptions = [stored[key] for key in self.handlers if key in stored]
        for key in self.handlers.keys() - stored.keys() - self._gone:
            self._gone.add(key)
            log.warning("%s/%s was unsubscribed: its handler no longer runs here", *key)

    def _one_round(self) -> bool:
        """One message from each subscription in turn; True if any had one."""
        took = False
        for sub in self._subscriptions:
            if self._should_stop():
                break
            try:
                if sub.policy == AT_MOST_ONCE:
                    took = self._at_most_once(sub) or took
                else:
                    took = self._at_least_once(sub) or took
            except QueueNotFound:  # unsubscribed since the last refresh
                continue
        return took

    # -- the policies ---------------------------------------------------------------------

    def _at_most_once(self, sub: Subscription) -> bool:
        message = self.mq.pop(sub.queue)
        if message is None:
            return False
        error = self._call(sub, message)
        if error is not None:
            self.summary.failed += 1
            self.summary.dropped += 1
            log.error(
                "%s/%s: message %d failed and is dropped (at_most_once): %s",
                sub.topic, sub.subscriber, message.msg_id, _first_line(error),
            )  # fmt: skip
        else:
            self.summary.handled += 1
        return True

    def _at_least_once(self, sub: Subscription) -> bool:
        messages = self.mq.read(sub.queue, vt=sub.vt, qty=1)
        if not messages:
            return False
        message = messages[0]
        if message.read_ct > sub.max_tries:  # earlier reads ended without an outcome
            self.summary.skipped += 1
            unanswered = (
                f"read {message.read_ct - 1} times without an outcome (its consumer was killed, or "
                f"its handler ran past the {_seconds(sub.vt)} visibility timeout): not called again"
            )
            self._give_up(sub, message, unanswered)
            return True
        error = self._call(sub, message)
        if error is not None:
            self.summary.failed += 1
            if message.read_ct >= sub.max_tries:
                self._give_up(sub, message, error)
            else:
                log.warning(
                    "%s/%s: message %d failed (try %d of %d), tried again in %s: %s",
                    sub.topic, sub.subscriber, message.msg_id, message.read_ct, sub.max_tries,
                    _seconds(sub.vt), _first_line(error),
                )  # fmt: skip
            return True
        self.summary.handled += 1
        if not self.mq.delete(sub.queue, message.msg_id, read_ct=message.read_ct):
            log.warning(
                "%s/%s: message %d was handled after its %s visibility timeout ran out, and another "
                "consumer has it now: it may be handled twice (raise the subscription's vt)",
                sub.topic, sub.subscriber, message.msg_id, _seconds(sub.vt),
            )  # fmt: skip
        return True

    def _give_up(self, sub: Subscription, message: Message, error: str) -> None:
        if archive_failed(self.mq, sub.queue, message, error):
            self.summary.archived += 1
            log.error(
                "%s/%s: message %d archived after %s: %s",
                sub.topic, sub.subscriber, message.msg_id, counted(message.read_ct, "try", "tries"),
                _first_line(error),
            )  # fmt: skip

    def _call(self, sub: Subscription, message: Message) -> str | None:
        """Call the handler under its timeout: None when it returned, else the error (an
        exception it raised, or its timeout). KeyboardInterrupt and the like go on up."""
        handler = self.handlers[(sub.topic, sub.subscriber)]
        log.debug("%s/%s: message %d", sub.topic, sub.subscriber, message.msg_id)
        watchdog = self._runner.watchdog
        assert watchdog is not None, "handlers are called by run()"
        timeout = handler.timeout if handler.timeout is not None else self._timeout
        label = f"message {message.msg_id} of {sub.topic}/{sub.subscriber}"
        self._at_hand = sub
        watch = watchdog.begin(message, timeout, label, again=_again(sub))
        error: BaseException | None = None
        try:
            call_task(handler.func, (message,) if handler.pass_message else (message.message,))
        except BaseException as exc:
            error = exc
        watchdog.end(watch)  # at once: no JobTimeout is raised past this line
        self._at_hand = None
        if watch is not None and watch.expired:
            return timed_out_error(watch, error)
        if error is not None and not isinstance(error, Exception):
            raise error
        return None if error is None else describe_error(error)

    def record_abandoned(self, watch: Watch, why_not_stopped: str) -> None:
        """The watchdog's last act before it ends the process: a message on its last try is
        archived with the timeout; any other comes again after its visibility timeout."""
        sub, message = self._at_hand, watch.job
        if sub is None or sub.policy == AT_MOST_ONCE or message.read_ct < sub.max_tries:
            return
        error = (
            f"JobTimeout: {timed_out(watch.timeout)}; the consumer process was ended (exit status "
            f"{WATCHDOG_EXIT_STATUS}) because the handler did not stop within the grace period "
            f"({timeout_text(watch.grace)}): {why_not_stopped}"
        )
        self._give_up(sub, message, error)


def _again(sub: Subscription) -> str:
    """What becomes of a message whose handler's timeout ended the consumer, unrecorded."""
    if sub.policy == AT_MOST_ONCE:
        return "it was taken (at_most_once) and is gone"
    return f"it comes again after its {_seconds(sub.vt)} visibility timeout"


def _seconds(value: float) -> str:
    """A visibility timeout for a log line: 0.2s, 30s, 2m."""
    return f"{value:g}s" if value < 60 else format_duration(value)


def _first_line(error: str) -> str:
    return error.splitlines()[0] if error else error
