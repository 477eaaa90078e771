"""The dashboard's message-queue pages: the queues with their figures, a queue's messages (paged,
as they stand: a peek reads nothing), one message; and its actions, archive or delete one
message and purge a queue, POSTs under the same Guard as the job pages (posts.check_action).

A purge deletes what the page showed: the messages up to the newest id it counted, never one sent
after the page was drawn (batchq.mq.overview.purge_up_to)."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

from flask import Blueprint, abort, current_app, redirect, render_template, request

from ..core.config import counted
from ..errors import ConfigError
from ..mq import MessageQueue
from ..mq.overview import MSG_ID_RANGE, PAGE_SIZE, message_page, peek, purge_up_to, queue_figures
from ..policy.settings import schema_name
from .context import current
from .params import integer
from .posts import back, check_action

blueprint = Blueprint("messages", __name__)
_KEY = "batchq.dashboard.messages"


@blueprint.app_template_filter("json_text")
def json_text(value: Any, indent: int | None = None) -> str:
    """A message or its headers as JSON text (plain text: Jinja escapes it); text stays text (a
    row written by hand that is no JSON)."""
    return (
        value if isinstance(value, str) else json.dumps(value, indent=indent, ensure_ascii=False, default=str)
    )


def _messages() -> MessageQueue:
    """A MessageQueue on the dashboard's own database object: this thread's connection."""
    found: MessageQueue | None = current_app.extensions.get(_KEY)
    if found is None:
        found = MessageQueue(str(current().queue.url))
        found.database = current().queue.database
        current_app.extensions[_KEY] = found
    return found


def _queue_name(params: Any) -> str:
    """The queue a link or form names, as stored: rows written by hand may hold any name."""
    name = params.get("queue", "")
    if not name:
        raise ConfigError("which message queue? add ?queue=NAME (the Message queues page links them)")
    return str(name)


def _figures(name: str) -> Any:
    found = queue_figures(current().backend, name)
    if not found:
        abort(404, f"there is no message queue {name!r}")
    return found[0]


@blueprint.get("/mq")
def queues() -> str:
    return render_template("mq_queues.html", title="Message queues", queues=queue_figures(current().backend))


@blueprint.get("/mq/queue")
def queue() -> str:
    name = _queue_name(request.args)
    after = integer(request.args, "after", (0, MSG_ID_RANGE[1])) if request.args.get("after") else 0
    figures = _figures(name)
    page = message_page(current().backend, name, after=after, limit=PAGE_SIZE)
    next_url = (
        f"/mq/queue?{urlencode({'queue': name, 'after': page[-1].msg_id})}"
        if len(page) == PAGE_SIZE
        else None
    )
    return render_template(
        "mq_queue.html",
        title=f"Message queue {name}",
        q=figures,
        page=page,
        first_url=f"/mq/queue?{urlencode({'queue': name})}" if after else None,
        next_url=next_url,
        schema_name=schema_name(figures.schema),
    )


@blueprint.get("/mq/message")
def message() -> tuple[str, int]:
    name = _queue_name(request.args)
    msg_id = integer(request.args, "id", MSG_ID_RANGE)
    _figures(name)
    found = peek(current().backend, name, msg_id)
    return render_template(
        "mq_message.html", title=f"Message {msg_id} of {name}", queue=name, msg_id=msg_id, m=found
    ), (200 if found else 404)


def _done(note: str, default: str) -> Any:
    return redirect(back(default, note=note, sig=current().guard.note_signature(note)), 303)


def _queue_page(name: str) -> str:
    return f"/mq/queue?{urlencode({'queue': name})}"


@blueprint.post("/actions/mq-archive")
def archive() -> Any:
    check_action()
    name, msg_id = _queue_name(request.form), integer(request.form, "id", MSG_ID_RANGE)
    if _messages().archive(name, msg_id):
        note = f"archived message {msg_id} of queue {name}"
    else:
        note = f"message {msg_id} of queue {name} was not archived: it is no longer there"
    return _done(note, _queue_page(name))


@blueprint.post("/actions/mq-delete")
def delete() -> Any:
    check_action()
    name, msg_id = _queue_name(request.form), integer(request.form, "id", MSG_ID_RANGE)
    if _messages().delete(name, msg_id):
        note = f"deleted message {msg_id} of queue {name}"
    else:
        note = f"message {msg_id} of queue {name} was not deleted: it is no longer there"
    return _done(note, _queue_page(name))


@blueprint.post("/actions/mq-purge")
def purge() -> Any:
    """Delete the messages the page counted: up to the newest id it showed (up_to)."""
    check_action()
    name = _queue_name(request.form)
    up_to = integer(request.form, "up_to", (0, MSG_ID_RANGE[1]), " (act from the queue's page)")
    _figures(name)
    deleted = purge_up_to(current().backend, name, up_to)
    return _done(f"deleted {counted(deleted, 'message')} of queue {name} (ids up to {up_to})", "/mq")
