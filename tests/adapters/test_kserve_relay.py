"""The relay sets the event loop's events for threads that must not block (the model's worker)."""

from __future__ import annotations

import asyncio
import threading

from jaxport.adapters.kserve.relay import Relay


def test_events_woken_from_other_threads_are_set_on_the_loop_and_close_stops_the_thread() -> None:
    async def main() -> list[bool]:
        relay = Relay(asyncio.get_running_loop())
        events = [asyncio.Event() for _ in range(5)]
        threads = [threading.Thread(target=relay.waker(event)) for event in events for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        async with asyncio.timeout(30):  # bounded: each set once the relay's thread ran
            await asyncio.gather(*(event.wait() for event in events))
        await asyncio.to_thread(relay.close)
        return [event.is_set() for event in events]

    before = {t.name for t in threading.enumerate()}
    assert asyncio.run(main()) == [True] * 5
    assert "jaxport-relay" not in {t.name for t in threading.enumerate()} - before
