"""`list` iterates every page of `owner=*`, each agent once."""

from __future__ import annotations

import asyncio
import math

from snapwake import AsyncClient, Client

from .serving import Serve

AGENTS = 250
PAGE = 37


async def test_every_agent_of_250_is_seen_once_across_pages(serve: Serve) -> None:
    async with AsyncClient(serve.url, user="pager") as pager:
        room = asyncio.Semaphore(16)

        async def create(n: int) -> str:
            async with room:
                agent = await pager.create("hermes", f"Paged {n}", retention="temporary")
                return agent["agent_id"]

        created = await asyncio.gather(*(create(n) for n in range(AGENTS)))
    assert len(set(created)) == AGENTS

    with Client(serve.url, user="root", admin=True) as admin:
        pages = list(admin.pages(owner="*", limit=PAGE))
        seen = [agent["agent_id"] for page in pages for agent in page["agents"]]
        assert len(seen) == len(set(seen)), "an agent was listed twice"
        assert set(created) <= set(seen)
        assert len(pages) == math.ceil(len(seen) / PAGE)
        assert all(len(page["agents"]) == PAGE for page in pages[:-1])
        # `list` is the same walk, agent by agent.
        assert [a["agent_id"] for a in admin.list(owner="*", limit=PAGE)] == seen

    # An owner's own list is one answer, with every agent of theirs.
    with Client(serve.url, user="pager") as pager_again:
        assert sorted(a["agent_id"] for a in pager_again.list()) == sorted(created)
