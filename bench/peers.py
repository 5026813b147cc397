"""A peer that fails does not end the benchmark run.

On a fresh machine Swift's first start answered 6,048 errors in 7,379 requests and the
whole run stopped with no table. Now a scenario that fails is run once more after the
peer it names is started again; a scenario that still fails becomes a row that says which
peer failed and why, with no figures, and the run goes on to the next scenario.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable, Sequence
from typing import TypeVar

from bench.load import PeerFailed
from bench.scenarios import Row

__all__ = ["PeerFailed", "missing_row", "run_all"]

C = TypeVar("C")
Scenario = Callable[[C], list[Row]]


def missing_row(sid: str, peer: str, error: BaseException) -> Row:
    reason = " ".join(str(error).split())[:160] or type(error).__name__
    return Row(sid, f"missing: {peer} failed twice ({reason})", "", None)


def run_all(
    ctx: C,
    scenarios: Sequence[tuple[str, Scenario[C]]],
    peer_of: Callable[[C, BaseException], str],
    restart: Callable[[C, str], None],
) -> list[Row]:
    """Every scenario in turn; each failure gets one restart of its peer and one more try."""
    rows: list[Row] = []
    for sid, scenario in scenarios:
        rows += _one(ctx, sid, scenario, peer_of, restart)
    return rows


def _one(
    ctx: C,
    sid: str,
    scenario: Scenario[C],
    peer_of: Callable[[C, BaseException], str],
    restart: Callable[[C, str], None],
) -> list[Row]:
    try:
        return scenario(ctx)
    except Exception as first:
        peer = peer_of(ctx, first)
        _say(f"scenario {sid}: {peer} failed ({first}); starting {peer} again", first)
    try:
        restart(ctx, peer)
        return scenario(ctx)
    except Exception as second:
        peer = peer_of(ctx, second)
        _say(f"scenario {sid}: {peer} failed again ({second}); its row is missing", second)
        return [missing_row(sid, peer, second)]


def _say(message: str, error: BaseException) -> None:
    print(f"  {message}", file=sys.stderr)
    traceback.print_exception(error, file=sys.stderr, limit=-3)
