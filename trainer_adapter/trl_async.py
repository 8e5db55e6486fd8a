"""The ``async def`` TRL reward function, :class:`AsyncRefereeReward`: :class:`RefereeReward`
awaited on TRL's event loop, with an :class:`~referee.client.sdk_async.AsyncRefereeClient` per
event loop (or the caller's client, sync or async).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from referee.client.errors import RefereeError
from referee.client.sdk import AsyncRefereeClient, RefereeClient
from referee.trainer_adapter.trl_reward import Client, GraderSpec, RefereeReward

__all__ = ["AsyncRefereeReward"]


class AsyncRefereeReward(RefereeReward):
    """The ``async def`` form: TRL awaits it on its event loop, alongside other async rewards.
    An :class:`AsyncRefereeClient` is made per event loop (an httpx async pool is bound to
    the loop that opened it)."""

    def __init__(self, client_or_url: Client, grader: GraderSpec = None, **options: Any) -> None:
        super().__init__(client_or_url, grader, **options)
        self._loops: dict[int, AsyncRefereeClient] = {}
        if isinstance(self._client, AsyncRefereeClient):
            self._given: AsyncRefereeClient | None = self._client
        else:
            self._given = None

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state["_loops"] = {}
        state["_given"] = None
        return state

    def _async_client(self) -> AsyncRefereeClient:
        if self._given is not None:
            return self._given
        loop = id(asyncio.get_running_loop())
        client = self._loops.get(loop)
        if client is None:
            client = self._loops[loop] = self._open(AsyncRefereeClient)
        return client

    async def aclose(self) -> None:
        """Close the clients this function opened; call it on the loop that ran it (TRL's)."""
        for client in self._loops.values():
            await client.aclose()
        self._loops.clear()
        self.close()

    async def __call__(  # type: ignore[override]
        self,
        prompts: Sequence[Any],
        completions: Sequence[Any],
        completion_ids: Sequence[Any] | None = None,
        **columns: Any,
    ) -> list[float | None]:
        built = self._build(prompts, completions, columns)
        response, error = None, None
        if built.items:
            try:
                if isinstance(self._client, RefereeClient):
                    client = self._client
                    response = await asyncio.to_thread(
                        client.rewards, built.items, pass_threshold=self.pass_threshold
                    )
                else:
                    response = await self._async_client().rewards(
                        built.items, pass_threshold=self.pass_threshold
                    )
            except RefereeError as exc:
                if self.on_error == "raise":
                    raise
                error = str(exc)
        return self._finish(len(prompts), built, response, error, columns)
