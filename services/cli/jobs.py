"""``referee worker`` and ``referee jobs``: the Celery worker, and jobs from the command line.

REFEREE_BROKER_URL=redis://127.0.0.1:6379/0 referee worker --concurrency 2
referee jobs submit prm.jsonl --server http://127.0.0.1:8000 --wait --out scored.jsonl
referee jobs status JOB_ID --server URL      # state and progress, as JSON
referee jobs wait JOB_ID --server URL --out scored.jsonl
referee jobs cancel JOB_ID --server URL

``jobs submit --wait`` and ``jobs wait`` show a progress bar (items done, PRM rollouts) and exit
0 when the job succeeded, 1 when it failed or was cancelled.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

__all__ = ["register"]


def _worker(args: argparse.Namespace) -> int:
    from referee.services.jobs.celery_app import make_celery
    from referee.services.settings import Settings

    overrides: dict[str, Any] = {}
    if args.broker:
        overrides["broker_url"] = args.broker
    settings = Settings(**overrides)
    if not settings.broker_url:
        print(
            "referee worker: no broker: set REFEREE_BROKER_URL (e.g. redis://127.0.0.1:6379/0) "
            "or pass --broker; without one, `referee serve` runs jobs in-process",
            file=sys.stderr,
        )
        return 2
    app = make_celery(settings)
    argv = [
        "worker",
        f"--loglevel={args.loglevel}",
        f"--concurrency={args.concurrency}",
        f"--pool={args.pool}",
        f"--queues={settings.job_queue}",
    ]
    if args.hostname:
        argv.append(f"--hostname={args.hostname}")
    elif settings.worker_name:
        argv.append(f"--hostname=celery@{settings.worker_name}")
    app.worker_main(argv)
    return 0


def _client(args: argparse.Namespace) -> Any:
    from referee.client import RefereeClient

    return RefereeClient(args.server, api_key=args.api_key)


def _follow(client: Any, job_id: str, args: argparse.Namespace) -> int:
    from tqdm import tqdm

    bar = tqdm(total=None, unit="item", desc=f"job {job_id}", file=sys.stderr, disable=args.quiet)

    def show(status: Any) -> None:
        bar.total = status.progress.total
        bar.n = status.progress.done
        bar.set_postfix(state=status.state.value, rollouts=status.progress.rollouts)
        bar.refresh()

    try:
        final = client.wait(job_id, progress=show, poll_s=args.poll)
    finally:
        bar.close()
    if final.result is not None:
        out = open(args.out, "w", encoding="utf-8") if args.out else sys.stdout
        for res in final.result.rewards:
            out.write(res.model_dump_json() + "\n")
        if out is not sys.stdout:
            out.close()
        print(f"job {job_id}: {final.state.value}, mean {final.result.mean:.4f}", file=sys.stderr)
        return 0
    print(f"job {job_id}: {final.state.value}: {final.error}", file=sys.stderr)
    return 1


def _submit(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from referee.client.models import RewardItem
    from referee.services.cli.main import _read_items

    items = []
    with open(args.file, encoding="utf-8") as stream:
        for lineno, data, error in _read_items(stream):
            try:
                if data is None:
                    raise ValueError(error)
                items.append(RewardItem.model_validate(data))
            except (ValidationError, ValueError) as exc:
                print(f"referee jobs submit: line {lineno}: {exc}", file=sys.stderr)
                return 2
    with _client(args) as client:
        job = client.submit(items, job_id=args.id, chunk_size=args.chunk_size)
        print(job.id)
        return _follow(client, job.id, args) if args.wait else 0


def _status(args: argparse.Namespace) -> int:
    with _client(args) as client:
        status = client.job(args.job_id)
    print(status.model_dump_json(exclude={"result"}, indent=2))
    return 0


def _wait(args: argparse.Namespace) -> int:
    with _client(args) as client:
        return _follow(client, args.job_id, args)


def _cancel(args: argparse.Namespace) -> int:
    with _client(args) as client:
        status = client.cancel(args.job_id)
    print(f"job {status.id}: {status.state.value}", file=sys.stderr)
    return 0


def register(sub: Any) -> None:
    worker = sub.add_parser("worker", help="run a Celery worker for jobs (needs a broker)")
    worker.add_argument("--broker", help="default: REFEREE_BROKER_URL")
    worker.add_argument("--concurrency", type=int, default=1, help="jobs run at once")
    # Jobs share the process's check pool, sandbox and models, so they run as threads of the
    # worker process (Celery's prefork children are daemonic and may not start the check pool's
    # processes; one worker process per core or per GPU is how referee scales out).
    worker.add_argument("--pool", default="threads", choices=["threads", "solo"])
    worker.add_argument("--loglevel", default="info")
    worker.add_argument("--hostname", help="the worker's node name (default: celery@host)")
    worker.set_defaults(func=_worker)

    jobs = sub.add_parser("jobs", help="submit, follow and cancel jobs on a referee server")
    verbs = jobs.add_subparsers(dest="verb", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--server", default="http://127.0.0.1:8000")
        p.add_argument("--api-key", default=os.environ.get("REFEREE_API_KEY"))

    def following(p: argparse.ArgumentParser) -> None:
        p.add_argument("--out", help="write the results here as JSONL (default: stdout)")
        p.add_argument("--poll", type=float, default=0.5, help="seconds between status checks")
        p.add_argument("--quiet", action="store_true", help="no progress bar")

    submit = verbs.add_parser("submit", help="submit a JSONL file of reward items as a job")
    submit.add_argument("file")
    submit.add_argument("--id", help="the job's id (resubmitting the same id is safe)")
    submit.add_argument("--chunk-size", type=int)
    submit.add_argument("--wait", action="store_true", help="follow the job to its end")
    common(submit)
    following(submit)
    submit.set_defaults(func=_submit)

    for name, func, text in [
        ("status", _status, "a job's state and progress"),
        ("wait", _wait, "follow a job to its end, then print its results"),
        ("cancel", _cancel, "cancel a job"),
    ]:
        verb = verbs.add_parser(name, help=text)
        verb.add_argument("job_id")
        common(verb)
        if name == "wait":
            following(verb)
        verb.set_defaults(func=func)
