"""Server settings, read from the environment (prefix ``REFEREE_``) when the app is built.

REFEREE_MATH_WORKERS=4 REFEREE_API_KEYS=key1,key2 referee serve --port 8000
"""

from __future__ import annotations

import os
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

__all__ = ["Settings", "cpu_count"]


def cpu_count() -> int:
    """the CPU count"""
    return max(1, os.cpu_count() or 1)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="REFEREE_", extra="ignore")

    host: str = Field(
        "127.0.0.1",
        description="Address the server listens on, as `referee serve --host` sets it (the "
        "compose images pass REFEREE_HOST to that flag).",
    )
    port: int = Field(
        8000,
        description="Port the server listens on, as `referee serve --port` sets it (the compose "
        "images pass REFEREE_PORT to that flag).",
    )
    math_workers: int = Field(
        default_factory=cpu_count,
        ge=1,
        description="Check worker processes per server process (each check has a hard deadline).",
    )
    math_timeout_s: float = Field(5.0, gt=0, le=600, description="Deadline of one check.")
    math_memory_mb: int = Field(2048, ge=0, description="Address-space cap of a check worker.")
    max_batch_items: int = Field(
        10_000, ge=1, description="Most items in one /v1/rewards call (413 above)."
    )
    max_body_bytes: int = Field(
        256 * 1024 * 1024,
        ge=1024,
        description="Largest request body in bytes, counted as it arrives, chunked uploads "
        "too (413 above).",
    )
    max_header_bytes: int = Field(
        1024 * 1024,
        ge=16 * 1024,
        description="Largest request line and headers together, in bytes (a grader in the "
        "compatibility routes' `?grader=` is in the URL): the HTTP server's own limit "
        "(uvicorn's h11 `max_incomplete_event_size`, 16 KiB unless set), so above it the "
        "answer is the server's 400 in text/plain, not a problem document.",
    )
    max_json_depth: int = Field(
        64,
        ge=8,
        le=512,
        description="Deepest nesting of arrays and objects a JSON body may have (422 above; "
        "NaN and Infinity are 422 too).",
    )
    api_keys: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Accepted API keys (comma-separated); when set, every route but health, "
        "metrics, ping and the OpenAPI document needs `Authorization: Bearer KEY` or "
        "`X-API-Key: KEY` (401 otherwise); empty: no auth.",
    )
    broker_url: str | None = Field(
        None,
        description="Redis URL of the Celery broker and job store: jobs go to `referee worker` "
        "processes; unset: jobs run inside the API process.",
    )

    sandbox_backend: Literal["bwrap", "docker", "unsafe_local", "remote"] | None = Field(
        None,
        description="Isolation of code runs. Unset: bubblewrap, or unsafe_local when bubblewrap "
        "is unavailable and REFEREE_SANDBOX_ALLOW_UNSAFE_LOCAL is true. A backend set here never "
        "falls back to another. remote: programs run on the sandbox nodes of REFEREE_SANDBOX_URL.",
    )
    sandbox_url: str | None = Field(
        None,
        description="remote: the sandbox node(s), referee servers that run code, e.g. "
        "http://sandbox:8001 (several, comma-separated, are used in turn).",
    )
    sandbox_api_key: str | None = Field(None, description="remote: the sandbox nodes' API key.")
    sandbox_remote_wait_s: float = Field(
        300.0,
        gt=0,
        description="remote: how long a code item may wait for a free slot on a node, on top "
        "of its own limits.",
    )
    sandbox_remote_retry_s: float = Field(
        30.0, ge=0, description="remote: how long an unreachable sandbox node is retried."
    )
    sandbox_allow_unsafe_local: bool = Field(
        False, description="Allow running untrusted code WITHOUT isolation (trusted code only)."
    )
    sandbox_docker_image: str | None = Field(
        None,
        description="Image of the docker backend; unset: referee-sandbox:latest "
        "(docker/build-sandbox-image.sh builds it).",
    )
    sandbox_slots: int = Field(
        default_factory=cpu_count,
        ge=1,
        le=1024,
        description="Programs run at once. Single runs (/v1/sandbox/run, /run_code) and reward "
        "items wait for a free slot, first come first served.",
    )
    sandbox_queue_wait_s: float = Field(
        15.0,
        gt=0,
        description="Longest a single run waits for a free slot before it is answered 504 with "
        "Retry-After. veRL 0.9.1's SandboxFusion client allows a call compile_timeout + "
        "run_timeout + 10 s (30 s at its defaults) and retries only 504: 15 s of waiting plus a "
        "10 s run fits inside it.",
    )
    sandbox_queue_depth: int = Field(
        1024,
        ge=0,
        description="Single runs that may wait for a slot at once; one more is answered 503 "
        "with Retry-After (veRL: 64 calls per reward worker, 8 workers by default).",
    )
    sandbox_time_s: float = Field(5.0, gt=0, description="Default wall-clock limit of a run.")
    sandbox_max_time_s: float = Field(60.0, gt=0, description="Largest run limit a caller gets.")
    sandbox_memory_mb: int = Field(512, ge=16, description="Default memory limit of a run.")
    sandbox_max_memory_mb: int = Field(4096, ge=16, description="Largest memory limit allowed.")
    sandbox_compile_time_s: float = Field(30.0, gt=0, description="Limit of a compile step.")
    sandbox_output_bytes: int = Field(
        8 * 1024 * 1024, ge=1024, description="stdout kept of a run (more: output_limit)."
    )

    judge_backend: Literal["none", "transformers", "openai", "vllm"] = Field(
        "none",
        description="The model behind rubric and genrm graders: openai (any OpenAI-compatible "
        "server, e.g. vllm serve), vllm (in-process on a GPU) or transformers (in-process); "
        "none: they answer 503.",
    )
    judge_model: str | None = Field(
        None,
        description="openai: the served model's name; transformers: a local path (or "
        "`tiny-random`, a randomly initialised 2-layer model for tests and demos); vllm: a local "
        "path or a name vLLM can load.",
    )
    judge_base_url: str | None = Field(None, description="openai: the server, e.g. http://h:8001")
    judge_api_key: str | None = Field(
        None, description="openai: the key sent to the judge server (Authorization: Bearer)."
    )
    judge_concurrency: int = Field(32, ge=1, description="openai: requests in flight at once.")
    judge_top_logprobs: int = Field(
        20,
        ge=1,
        description="openai: first-token alternatives read for label probabilities "
        "(OpenAI allows 20; vLLM up to its --max-logprobs); vllm: the engine's max_logprobs.",
    )
    judge_vllm_options: dict[str, Any] = Field(
        default_factory=dict,
        description='vllm: keyword arguments of vllm.LLM, as JSON, e.g. {"max_model_len": 8192, '
        '"gpu_memory_utilization": 0.8, "tensor_parallel_size": 2}.',
    )
    sql_databases_dir: str | None = Field(
        None,
        description="A folder of SQLite files that sql graders name with `database` (NAME, "
        "NAME.sqlite, NAME.db, or Spider's and BIRD's NAME/NAME.sqlite), opened read-only; "
        "unset: sql graders carry their database as `setup` SQL.",
    )
    judge_templates_dir: str | None = Field(
        None,
        description="A directory whose pointwise_binary.txt, pointwise_score.txt, "
        "rubric_criterion.txt, rubric_implicit.txt and pairwise.txt replace the packaged "
        "prompts.",
    )
    policy_backend: Literal["none", "transformers", "openai", "vllm"] = Field(
        "none",
        description="The policy model prm_mc graders sample rollouts from; none: they answer 503.",
    )
    policy_model: str | None = Field(
        None,
        description="openai: the served model's name; transformers: a local path (or "
        "`tiny-random` for tests and demos); vllm: a path or a name vLLM can load (engine "
        "options from REFEREE_JUDGE_VLLM_OPTIONS).",
    )
    policy_base_url: str | None = Field(None, description="openai: the server, e.g. http://h:8002")
    policy_api_key: str | None = Field(
        None, description="openai: the key sent to the policy server (Authorization: Bearer)."
    )
    policy_concurrency: int = Field(32, ge=1, description="openai: requests in flight at once.")
    torch_threads: int | None = Field(
        None,
        ge=1,
        description="transformers judge or policy: torch's intra-op threads in this process "
        "(default: torch's, one per core). Several worker processes on one machine share the "
        "cores better with cores / processes each.",
    )
    prm_sync_max_rollouts: int = Field(
        256,
        ge=0,
        description="Most rollouts the prm_mc graders of one /v1/rewards call may plan; more "
        "must go through POST /v1/jobs.",
    )
    job_concurrency: int = Field(
        1, ge=1, le=64, description="Embedded mode (no broker): jobs run at once in the server."
    )
    job_time_limit_s: float = Field(
        6 * 3600.0, gt=0, description="A job still running after this long fails."
    )
    job_lease_s: float = Field(
        30.0,
        gt=0,
        description="A running job's worker renews its lease every third of this; a job whose "
        "lease lapsed (its worker died) is queued again and resumes from its saved chunks.",
    )
    job_ttl_s: int = Field(7 * 86400, ge=60, description="Finished jobs are kept this long.")
    max_job_items: int = Field(200_000, ge=1, description="Most items in one job.")
    job_queue: str = Field("referee", description="The Celery queue jobs are sent to.")
    worker_name: str | None = Field(
        None,
        description="This worker's name in a job's status and its Celery node name (default: "
        "the host name). Containers with host networking share the host's name: "
        "docker/entrypoint.sh names each worker container after its id.",
    )
    compat_without_api_key: bool = Field(
        False,
        description="Serve the compatibility routes (SandboxFusion /run_code; OpenRLHF "
        "/openrlhf/reward and /get_reward; slime /slime/reward) without an API key even when "
        "keys are set (those clients cannot send one).",
    )
    graders: dict[str, Any] | None = Field(
        None,
        description='Graders registered by name (JSON: {"name": grader, ...}), used as '
        '{"type": "named", "name": ...}; references and tests may come with each item.',
    )
    graders_file: str | None = Field(
        None, description="A JSON file of graders by name (REFEREE_GRADERS adds to it)."
    )
    compat_grader: dict[str, Any] | None = Field(
        None,
        description='The grader of the OpenRLHF and slime routes (JSON, e.g. {"type": "math"}) '
        "when the request names none; the sample's label is its reference. Default: math.",
    )

    environments_max_problems: int = Field(
        10_000,
        ge=1,
        description="Most problems one /v1/environments or /v1/curriculum/problems call makes "
        "(413 above).",
    )
    procedural_timeout_s: float = Field(
        20.0,
        gt=0,
        le=600,
        description="Least deadline of an item with a procedural grader (a worker's first one "
        "imports reasoning-gym); a scorer that overruns it is killed (outcome timeout).",
    )
    environments_timeout_s: float = Field(
        60.0,
        gt=0,
        le=3600,
        description="Deadline of generating one chunk of 64 problems on the check pool (a config "
        "too hard to generate: 422).",
    )
    curriculum_low: float = Field(0.3, ge=0, le=1, description="Below this pass rate: easier.")
    curriculum_high: float = Field(0.7, ge=0, le=1, description="Above this pass rate: harder.")
    curriculum_window: int = Field(
        32, ge=1, description="Results at a task's level before its level may move."
    )
    curriculum_tasks: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Tasks /v1/curriculum/problems draws from when the request names none "
        "(comma-separated); empty: every task.",
    )

    sessions_max_live: int = Field(
        32,
        ge=1,
        le=4096,
        description="Multi-turn sessions (/v1/sessions) this server process holds at once; one "
        "more is answered 503 with Retry-After. Each python session holds a sandbox.",
    )
    sessions_idle_timeout_s: float = Field(
        300.0,
        gt=0,
        le=86_400,
        description="A session no call touched for this long is closed (its sandbox killed), "
        "even if its caller vanished.",
    )
    sessions_deadline_s: float = Field(
        1800.0,
        gt=0,
        le=86_400,
        description="Lifetime of a session that asks for none (`deadline_s`); it is closed then.",
    )
    sessions_max_deadline_s: float = Field(
        7200.0,
        gt=0,
        le=86_400,
        description="Longest lifetime a session may ask for (a longer `deadline_s` is capped).",
    )

    sessions_python_call_s: float = Field(
        10.0,
        gt=0,
        le=3600,
        description="python sessions: wall-clock limit of one tool call (the cell is "
        "interrupted, its variables kept); its CPU limit is the same.",
    )
    sessions_python_cpu_s: float = Field(
        120.0,
        gt=0,
        le=86_400,
        description="python sessions: CPU time of the whole session; past it the session's "
        "interpreter is gone and the episode is over.",
    )
    sessions_python_memory_mb: int = Field(
        1024,
        ge=64,
        le=65_536,
        description="python sessions: memory of the session's sandbox (interpreter and every "
        "process it starts).",
    )
    sessions_python_output_kb: int = Field(
        64,
        ge=1,
        le=16_384,
        description="python sessions: output of one call kept for the model (stdout and "
        "stderr each); the rest is cut, and the output says so.",
    )
    sessions_socket_dir: str | None = Field(
        None,
        description="Folder of the Unix sockets through which a server's worker processes pass "
        "each other the calls of sessions the other holds (one socket per process); unset: "
        "one under the temp folder per parent process, which uvicorn's workers share.",
    )

    @field_validator("api_keys", "curriculum_tasks", mode="before")
    @classmethod
    def _split_keys(cls, value: object) -> object:
        if isinstance(value, str):
            return [k.strip() for k in value.split(",") if k.strip()]
        return value
