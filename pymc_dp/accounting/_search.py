"""The one search both planners need: the largest iteration count that stays within a budget."""

from __future__ import annotations


def largest_within(ok, upper: int) -> int:
    """Largest k in 1..``upper`` with ``ok(k)`` for a predicate true up to some k and false after.

    0 when ``ok(1)`` fails. Doubling then bisection: O(log k) calls of ``ok``.
    """
    if not ok(1):
        return 0
    lo, hi = 1, 2
    while hi <= upper and ok(hi):
        lo, hi = hi, hi * 2
    if hi > upper:
        return lo
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return lo
