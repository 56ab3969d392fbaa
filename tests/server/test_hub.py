"""The hub: every subscriber gets every frame in order; a stalled one is dropped, not waited for."""

from __future__ import annotations

import asyncio
import json

from vaultpilot.server.ws import Hub, Subscriber


def test_publish_reaches_every_subscriber_once_in_order() -> None:
    async def go() -> list[list[dict[str, object]]]:
        hub = Hub()
        subs = [Subscriber(100) for _ in range(3)]
        for sub in subs:
            hub.add(sub)
        agent = Subscriber(100)
        agent.role = "agent"
        hub.add(agent)
        for i in range(5):
            assert hub.publish({"type": "event", "n": i}) == 4
        assert hub.publish({"type": "command"}, role="agent") == 1
        return [
            [json.loads(s.queue.get_nowait()) for _ in range(s.queue.qsize())]
            for s in [*subs, agent]
        ]

    received = asyncio.run(go())
    assert received[0] == received[1] == received[2]
    assert [f["n"] for f in received[0]] == [0, 1, 2, 3, 4]
    assert [f["seq"] for f in received[0]] == [1, 2, 3, 4, 5]
    assert received[3][-1] == {"type": "command", "seq": 6}


def test_a_full_queue_drops_only_that_subscriber() -> None:
    async def go() -> tuple[int, bool, bool, int]:
        hub = Hub()
        slow, fast = Subscriber(2), Subscriber(100)
        hub.add(slow)
        hub.add(fast)
        for i in range(3):
            hub.publish({"n": i})
        return hub.count(), slow.dropped.is_set(), fast.dropped.is_set(), fast.queue.qsize()

    count, slow_dropped, fast_dropped, fast_size = asyncio.run(go())
    assert (count, slow_dropped, fast_dropped, fast_size) == (1, True, False, 3)
