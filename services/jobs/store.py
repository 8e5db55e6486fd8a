"""Where jobs live: their request, state, progress, saved chunks of results, and a worker's lease.

:class:`RedisJobStore` is shared by the API replicas and the Celery workers (Redis is the broker
and the result store); :class:`MemoryJobStore` is the same thing inside one process, for the
embedded mode with no broker. Both are synchronous (workers are) and safe to call from threads.

State changes are guarded: a job leaves ``queued``/``running`` once, so a worker finishing a
chunk after the job was cancelled cannot turn it back into ``succeeded``. Results are saved a
chunk at a time together with the progress counter, so a job that a dead worker left half done
resumes where it stopped. A running job holds a lease that its worker renews; a job whose lease
lapsed is found by :meth:`JobStore.orphans` and queued again; a queued job whose message was
lost (:mod:`~referee.services.jobs.recovery`) by :meth:`JobStore.queued_without_lease`.

Redis keys (``ns`` defaults to ``referee:``): ``ns job:ID`` (hash), ``ns job:ID:chunks`` (hash
index → results JSON), ``ns job:ID:lease``, ``ns jobs:active`` (set of unfinished ids).

:class:`JobRecord`, :class:`JobStore` and ``FINISHED`` are defined in
:mod:`~referee.services.jobs.records` and importable from here as well.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from referee.services.jobs.records import FINISHED, JobRecord, JobStore

__all__ = ["FINISHED", "JobRecord", "JobStore", "MemoryJobStore", "RedisJobStore"]

_OPEN = ("queued", "running")  # the states a guarded change may leave (the Lua scripts test these)


class MemoryJobStore:
    """Jobs of this process only (the embedded mode)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: dict[str, JobRecord] = {}
        self._requests: dict[str, dict[str, Any]] = {}
        self._chunks: dict[str, dict[int, list[dict[str, Any]]]] = {}
        self._leases: dict[str, tuple[str, float]] = {}

    def create(self, job_id: str, request: dict[str, Any], total: int, digest: str) -> bool:
        with self._lock:
            if job_id in self._jobs:
                return False
            now = time.time()
            self._jobs[job_id] = JobRecord(
                job_id, "queued", total, created=now, updated=now, digest=digest
            )
            self._requests[job_id] = request
            self._chunks[job_id] = {}
            return True

    def get(self, job_id: str, with_result: bool = True) -> JobRecord | None:
        with self._lock:
            rec = self._jobs.get(job_id)
            if rec is None:
                return None
            copy = JobRecord(**{k: getattr(rec, k) for k in JobRecord.__slots__})
            if not with_result:
                copy.result = None
            return copy

    def request(self, job_id: str) -> dict[str, Any] | None:
        with self._lock:
            return self._requests.get(job_id)

    def start(self, job_id: str, worker: str) -> bool:
        with self._lock:
            rec = self._jobs.get(job_id)
            if rec is None or rec.state not in _OPEN:
                return False
            rec.state, rec.worker, rec.updated = "running", worker, time.time()
            rec.attempts += 1
            return True

    def finish(
        self,
        job_id: str,
        state: str,
        error: str | None = None,
        result: dict[str, Any] | None = None,
    ) -> bool:
        with self._lock:
            rec = self._jobs.get(job_id)
            if rec is None or rec.state not in _OPEN:
                return False
            rec.state, rec.error, rec.result, rec.updated = state, error, result, time.time()
            rec.cancel = state == "cancelled"
            return True

    def cancel(self, job_id: str) -> bool:
        return self.finish(job_id, "cancelled", error="cancelled by request")

    def save_chunk(self, job_id: str, index: int, results: list[dict[str, Any]]) -> None:
        with self._lock:
            chunks = self._chunks.setdefault(job_id, {})
            if index not in chunks:
                chunks[index] = results
                self._jobs[job_id].done += len(results)
                self._jobs[job_id].updated = time.time()

    def chunks(self, job_id: str) -> dict[int, list[dict[str, Any]]]:
        with self._lock:
            return dict(self._chunks.get(job_id, {}))

    def add_rollouts(self, job_id: str, n: int) -> None:
        with self._lock:
            rec = self._jobs.get(job_id)
            if rec is not None:
                rec.rollouts += n
                rec.updated = time.time()

    def acquire_lease(self, job_id: str, worker: str, ttl_s: float) -> bool:
        with self._lock:
            held = self._leases.get(job_id)
            if held is not None and held[1] > time.monotonic() and held[0] != worker:
                return False
            self._leases[job_id] = (worker, time.monotonic() + ttl_s)
            return True

    def renew_lease(self, job_id: str, worker: str, ttl_s: float) -> bool:
        with self._lock:
            held = self._leases.get(job_id)
            if held is None or held[0] != worker:
                return False
            self._leases[job_id] = (worker, time.monotonic() + ttl_s)
            return True

    def release_lease(self, job_id: str, worker: str) -> None:
        with self._lock:
            if self._leases.get(job_id, ("", 0.0))[0] == worker:
                del self._leases[job_id]

    def orphans(self, older_than_s: float) -> list[str]:
        return []  # one process: a job's runner cannot die without the store

    def queued_without_lease(self, older_than_s: float) -> list[str]:
        return []

    def claim_requeue(self, job_id: str, ttl_s: float) -> bool:
        return False


# Redis: state transitions are Lua scripts, so two processes never interleave inside one.
_CREATE = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'state', 'queued', 'total', ARGV[1], 'done', 0, 'rollouts', 0,
  'attempts', 0, 'created', ARGV[2], 'updated', ARGV[2], 'digest', ARGV[3], 'request', ARGV[4])
redis.call('SADD', KEYS[2], ARGV[5])
return 1
"""
_START = """
local s = redis.call('HGET', KEYS[1], 'state')
if s ~= 'queued' and s ~= 'running' then return 0 end
redis.call('HSET', KEYS[1], 'state', 'running', 'worker', ARGV[1], 'updated', ARGV[2])
redis.call('HINCRBY', KEYS[1], 'attempts', 1)
return 1
"""
_FINISH = """
local s = redis.call('HGET', KEYS[1], 'state')
if s ~= 'queued' and s ~= 'running' then return 0 end
redis.call('HSET', KEYS[1], 'state', ARGV[1], 'updated', ARGV[2], 'error', ARGV[3],
  'result', ARGV[4], 'cancel', ARGV[5])
redis.call('SREM', KEYS[2], ARGV[6])
redis.call('EXPIRE', KEYS[1], ARGV[7])
redis.call('EXPIRE', KEYS[3], ARGV[7])
return 1
"""
_SAVE_CHUNK = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if redis.call('HSETNX', KEYS[2], ARGV[1], ARGV[2]) == 1 then
  redis.call('HINCRBY', KEYS[1], 'done', ARGV[3])
  redis.call('HSET', KEYS[1], 'updated', ARGV[4])
end
return 1
"""
_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
"""
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class RedisJobStore:
    """Jobs in Redis, shared by every API replica and worker."""

    def __init__(self, client: Any, ns: str = "referee:", ttl_s: int = 7 * 86400) -> None:
        self._r = client
        self._ns = ns
        self._ttl = ttl_s
        self._create = client.register_script(_CREATE)
        self._start = client.register_script(_START)
        self._finish = client.register_script(_FINISH)
        self._save = client.register_script(_SAVE_CHUNK)
        self._renew = client.register_script(_RENEW)
        self._release = client.register_script(_RELEASE)

    @classmethod
    def from_url(cls, url: str, ns: str = "referee:", ttl_s: int = 7 * 86400) -> RedisJobStore:
        import redis
        from redis.backoff import ExponentialBackoff
        from redis.retry import Retry

        # Ride out a Redis restart: reconnect with backoff for about half a minute.
        client = redis.Redis.from_url(
            url,
            retry=Retry(ExponentialBackoff(cap=2.0, base=0.1), retries=20),
            retry_on_error=[redis.ConnectionError, redis.TimeoutError],
            socket_connect_timeout=2,
            health_check_interval=10,
        )
        return cls(client, ns, ttl_s)

    def store_id(self) -> str:
        """An id written once into this Redis: another value later means Redis lost its data
        (restarted without persistence, flushed) and every job it held is gone."""
        import uuid

        key = f"{self._ns}store-id"
        self._r.set(key, uuid.uuid4().hex, nx=True)
        return _text(self._r.get(key))

    def _key(self, job_id: str, suffix: str = "") -> str:
        return f"{self._ns}job:{job_id}{suffix}"

    @property
    def _active(self) -> str:
        return f"{self._ns}jobs:active"

    def create(self, job_id: str, request: dict[str, Any], total: int, digest: str) -> bool:
        args = [total, time.time(), digest, json.dumps(request), job_id]
        return bool(self._create(keys=[self._key(job_id), self._active], args=args))

    def get(self, job_id: str, with_result: bool = True) -> JobRecord | None:
        fields = ["state", "total", "done", "rollouts", "attempts", "worker", "error"]
        fields += ["created", "updated", "digest", "cancel"]
        if with_result:
            fields.append("result")
        values = self._r.hmget(self._key(job_id), fields)
        raw = {k: (None if v is None else _text(v)) for k, v in zip(fields, values, strict=True)}
        if raw["state"] is None:
            return None
        result = raw.get("result")
        return JobRecord(
            id=job_id,
            state=raw["state"],
            total=int(raw["total"] or 0),
            done=int(raw["done"] or 0),
            rollouts=int(raw["rollouts"] or 0),
            attempts=int(raw["attempts"] or 0),
            worker=raw["worker"] or None,
            error=raw["error"] or None,
            created=float(raw["created"] or 0),
            updated=float(raw["updated"] or 0),
            digest=raw["digest"] or "",
            cancel=raw["cancel"] == "1",
            result=json.loads(result) if result else None,
        )

    def request(self, job_id: str) -> dict[str, Any] | None:
        raw = self._r.hget(self._key(job_id), "request")
        return None if raw is None else dict(json.loads(raw))

    def start(self, job_id: str, worker: str) -> bool:
        return bool(self._start(keys=[self._key(job_id)], args=[worker, time.time()]))

    def finish(
        self,
        job_id: str,
        state: str,
        error: str | None = None,
        result: dict[str, Any] | None = None,
    ) -> bool:
        args = [
            state,
            time.time(),
            error or "",
            json.dumps(result) if result is not None else "",
            "1" if state == "cancelled" else "0",
            job_id,
            self._ttl,
        ]
        keys = [self._key(job_id), self._active, self._key(job_id, ":chunks")]
        return bool(self._finish(keys=keys, args=args))

    def cancel(self, job_id: str) -> bool:
        return self.finish(job_id, "cancelled", error="cancelled by request")

    def save_chunk(self, job_id: str, index: int, results: list[dict[str, Any]]) -> None:
        keys = [self._key(job_id), self._key(job_id, ":chunks")]
        self._save(keys=keys, args=[index, json.dumps(results), len(results), time.time()])

    def chunks(self, job_id: str) -> dict[int, list[dict[str, Any]]]:
        raw = self._r.hgetall(self._key(job_id, ":chunks"))
        return {int(_text(k)): list(json.loads(v)) for k, v in raw.items()}

    def add_rollouts(self, job_id: str, n: int) -> None:
        pipe = self._r.pipeline(transaction=True)
        pipe.hincrby(self._key(job_id), "rollouts", n)
        pipe.hset(self._key(job_id), "updated", time.time())
        pipe.execute()

    def acquire_lease(self, job_id: str, worker: str, ttl_s: float) -> bool:
        key = self._key(job_id, ":lease")
        if self._r.set(key, worker, nx=True, px=int(ttl_s * 1000)):
            return True
        return self.renew_lease(job_id, worker, ttl_s)  # a redelivery to the same worker

    def renew_lease(self, job_id: str, worker: str, ttl_s: float) -> bool:
        key = self._key(job_id, ":lease")
        return bool(self._renew(keys=[key], args=[worker, int(ttl_s * 1000)]))

    def release_lease(self, job_id: str, worker: str) -> None:
        self._release(keys=[self._key(job_id, ":lease")], args=[worker])

    def _without_lease(self, state: str, older_than_s: float) -> list[str]:
        found = []
        now = time.time()
        for raw in self._r.smembers(self._active):
            job_id = _text(raw)
            current, updated = self._r.hmget(self._key(job_id), ["state", "updated"])
            if current is None:  # the record expired or was lost: nothing to resume
                self._r.srem(self._active, job_id)
                continue
            if _text(current) != state or self._r.exists(self._key(job_id, ":lease")):
                continue
            if now - float(_text(updated or b"0")) > older_than_s:
                found.append(job_id)
        return found

    def orphans(self, older_than_s: float) -> list[str]:
        return self._without_lease("running", older_than_s)

    def queued_without_lease(self, older_than_s: float) -> list[str]:
        return self._without_lease("queued", older_than_s)

    def claim_requeue(self, job_id: str, ttl_s: float) -> bool:
        key = self._key(job_id, ":requeue")
        return bool(self._r.set(key, "1", nx=True, px=int(ttl_s * 1000)))
