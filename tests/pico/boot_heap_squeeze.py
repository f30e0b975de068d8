# boot.py for one test on the emulated Pico (test_pico_faults.py: memory exhausted in the command path), never
# for a board. It runs before main.py and leaves an asyncio task behind, woken by GP28 (no profile uses that pin):
# GP28 driven high breaks MicroPython's heap into holes of 12 blocks (192 bytes), so that no allocation of 13
# blocks or more can succeed while about a fifth of the heap stays usable in those holes (55 of 246 KB, measured
# with a game on hc165); GP28 low gives it all back.
#
# The firmware then meets a MemoryError where it copies a long command line (up to 256 bytes, 16 blocks) out of
# its line buffer, in the command path itself, while its events, heartbeats, replies and short commands (each
# allocation under 192 bytes) find room as before. Nothing here writes to stdout: that is the firmware's link.
#
# The task runs in the firmware's own event loop (asyncio.run keeps the tasks created before it), so it squeezes
# only while every firmware task waits at an await, never in the middle of a firmware function.
#
# How: every piece is a tuple of None (one allocation of 8 + 4 x items bytes, no pointer into the heap), stored in
# a list made before the heap fills (an index store allocates nothing). With the collector off (an allocation
# that does not fit then fails at once), pieces of 12 blocks are taken first-fit until none fits, each followed by
# a piece of one block (the allocator's next search starts there, not at the bottom: the scan stalled 0.13-0.25 s of
# device time, ~1 s without); the gaps left are filled with pieces of 8, 4, 2 and 1 blocks until the heap is
# full. Then every other 12-block piece that lies exactly between two of the one-block pieces (by id(), its
# address) is dropped: each hole has kept pieces on both sides, so it can never grow, whatever the firmware frees
# later (the collector is conservative: an object the firmware no longer uses can stay reachable through a stale
# word on a stack until that word is overwritten). What the MemoryErrors of the filling left (the exception, its
# traceback) is garbage too: a last pass keeps pieces of 13 blocks until none fits.
import asyncio
import gc

from machine import Pin

_PIECE = (None,) * 46  # 8 + 4 x 46 = 192 bytes: 12 blocks of 16 bytes
_SEAL = (None,) * 50  # 13 blocks
_FILLS = ((None,) * 30, (None,) * 14, (None,) * 6, (None,) * 2)  # 8, 4, 2 and 1 blocks


def _fill(kept, k, piece):
    """Keep copies of ``piece`` in kept[k:] until one does not fit (or the list is full); returns the new k."""
    try:
        while k < len(kept):
            kept[k] = piece * 1
            k += 1
    except MemoryError:
        pass
    return k


def _squeeze(state):
    gc.collect()
    n = gc.mem_free() // 192 + 2
    kept = [None] * (2 * n + 2048)  # the 12-block pieces and their one-block pieces, the fillers, the seals
    state[0] = kept
    k = 0
    dot = _FILLS[-1]
    gc.disable()
    try:
        while k + 1 < len(kept):
            kept[k] = _PIECE * 1
            k += 1
            kept[k] = dot * 1
            k += 1
    except MemoryError:
        pass
    pairs = k  # kept[2j] is a 12-block piece, kept[2j + 1] the block after it (the last may have none)
    for fill in _FILLS:
        k = _fill(kept, k, fill)
    holes = 0
    take = True
    i = 2
    while i + 1 < pairs:  # (no range(): the heap is full, a range object would not fit)
        a = id(kept[i])
        if id(kept[i - 1]) + 16 == a and id(kept[i + 1]) == a + 192:
            if take:
                kept[i] = None
                holes += 1
            take = not take
        i += 2
    gc.enable()
    gc.collect()
    gc.disable()
    k = _fill(kept, k, _SEAL)
    gc.enable()
    state[1] = holes


def _start():
    pin = Pin(28, Pin.IN)
    flag = asyncio.ThreadSafeFlag()
    state = [None, 0, None]  # the kept pieces, how many holes, the task

    async def follow():
        while True:
            await flag.wait()
            if pin.value():
                if state[0] is None:
                    _squeeze(state)
            elif state[0] is not None:
                state[0] = None
                gc.collect()

    state[2] = asyncio.create_task(follow())
    pin.irq(lambda p: flag.set(), Pin.IRQ_RISING | Pin.IRQ_FALLING)


_start()
