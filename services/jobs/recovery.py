"""Finding jobs that no worker will finish, and queueing them again (every worker's reaper).

A job can be left behind at two points of its life, and each has its own sweep:

* **running, lease lapsed**: its worker died while it ran (SIGKILL, a lost machine). The lease
  is renewed every third of ``REFEREE_JOB_LEASE_S``; once it lapses the job is found by
  :meth:`~referee.services.jobs.store.RedisJobStore.orphans` and queued again; it resumes from
  its saved chunks.
* **queued, but its message is gone**: a worker took the message and died before it held the
  job's lease (a worker's first job spends a second or more building its check pool and models;
  the Redis transport itself pops a message before it records it as unacknowledged), or the API
  died between storing a job and sending its message. Celery would give such a message back
  only after its visibility timeout (hours: it must outlast the longest job), and no lease
  exists for the running-job sweep to miss. :func:`stranded` finds every queued job with no
  lease, older than a lease time, whose message is neither waiting in the queue nor taken less
  than a lease time ago, and it is queued again.

A job queued twice is harmless: the second delivery finds the lease held ("running elsewhere")
or the job finished, and is dropped. So both sweeps lean towards queueing again; a claim key per
job keeps many reapers from doing it more than once per two lease times.

The broker's layout read here is kombu's Redis transport (its default key names): a list per
queue (and per priority step), the ``unacked`` hash of messages taken and not acknowledged, and
the ``unacked_index`` sorted set of when each was taken.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

__all__ = ["held_by_broker", "reap_once", "stranded"]

log = logging.getLogger("referee.worker")

_UNACKED = "unacked"
_UNACKED_INDEX = "unacked_index"
_PRIORITY_SEP = "\x06\x16"
_PRIORITY_STEPS = (0, 3, 6, 9)
_PAGE = 1000


def _job_of(message: Any) -> str | None:
    """The job id of a Celery message (its task id is ``JOB:suffix``; see ``jobs.enqueue``)."""
    if not isinstance(message, dict):
        return None
    headers = message.get("headers")
    task_id = headers.get("id") if isinstance(headers, dict) else None
    if not isinstance(task_id, str) or ":" not in task_id:
        return None
    return task_id.rsplit(":", 1)[0]


def held_by_broker(client: Any, queue: str, taken_within_s: float) -> set[str]:
    """Jobs with a message the broker still holds for them: waiting in ``queue``, or taken by a
    worker less than ``taken_within_s`` ago (a message taken earlier whose job has no lease was
    taken by a worker that died)."""
    held: set[str] = set()
    keys = [queue] + [f"{queue}{_PRIORITY_SEP}{p}" for p in _PRIORITY_STEPS if p]
    for key in keys:
        start = 0
        while True:
            page = client.lrange(key, start, start + _PAGE - 1)
            for raw in page:
                try:
                    job = _job_of(json.loads(raw))
                except ValueError:
                    continue
                if job:
                    held.add(job)
            if len(page) < _PAGE:
                break
            start += _PAGE
    since = time.time() - taken_within_s
    for tag, raw in client.hgetall(_UNACKED).items():
        taken = client.zscore(_UNACKED_INDEX, tag)
        if taken is not None and float(taken) < since:
            continue
        try:
            job = _job_of(json.loads(raw)[0])
        except (ValueError, IndexError, TypeError):
            continue
        if job:
            held.add(job)
    return held


def stranded(store: Any, queue: str, lease_s: float) -> list[str]:
    """Queued jobs that no message will bring to a worker (see the module's docstring)."""
    candidates = store.queued_without_lease(older_than_s=lease_s)
    if not candidates:
        return []
    held = held_by_broker(store._r, queue, taken_within_s=lease_s)
    return [job for job in candidates if job not in held]


def reap_once(store: Any, celery: Any, lease_s: float, queue: str | None = None) -> list[str]:
    """Queue again every job left behind (both sweeps); returns their ids."""
    from referee.services.jobs.manager import enqueue

    found = list(store.orphans(older_than_s=lease_s))
    if queue is not None:
        found += stranded(store, queue, lease_s)
    requeued = []
    for job_id in found:
        if store.claim_requeue(job_id, ttl_s=lease_s * 2):
            log.warning("job %s lost its worker; queued again", job_id)
            enqueue(celery, job_id)
            requeued.append(job_id)
    return requeued
