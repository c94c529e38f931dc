"""The WL#6827 handler chain, at transaction granularity: ``reader | filter | applier``.

``EventHandler.handle(transaction, continuation)`` does its work and passes the transaction on with
:meth:`EventHandler.next`; a handler that discards a transaction marks the :class:`Continuation` instead
(``transaction_discarded``) and stops the chain. The reader side is ``binlake.binlog.iter_transactions``; the
position and GTID of each applied transaction travel with it (recorded by the applier, WL#6827 "positioning
update ... at the end of a transaction").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Optional

from binlake.binlog import Transaction
from binlake.pipeline.filters import TransactionFilter


@dataclass
class Continuation:
    """WL#6827 ``Continuation``: how the pipeline ended for the last transaction (no threads: no waiting)."""

    transaction_discarded: bool = False
    error: Optional[str] = None

    def signal(self, error: Optional[str] = None, discarded: bool = False) -> None:
        self.error = error
        self.transaction_discarded = discarded


class EventHandler:
    """WL#6827 ``EventHandler``: ``plug`` sets the next handler; ``append`` adds one at the end of the chain."""

    next_in_pipeline: Optional["EventHandler"] = None

    def plug(self, handler: "EventHandler") -> "EventHandler":
        self.next_in_pipeline = handler
        return handler

    def append(self, handler: "EventHandler") -> "EventHandler":
        last = self
        while last.next_in_pipeline is not None:
            last = last.next_in_pipeline
        last.plug(handler)
        return self

    def handle(self, trx: Transaction, cont: Continuation) -> None:
        self.next(trx, cont)

    def next(self, trx: Transaction, cont: Continuation) -> None:
        if self.next_in_pipeline is not None:
            self.next_in_pipeline.handle(trx, cont)
        else:
            cont.signal()


class FilterHandler(EventHandler):
    """Discards rolled back, incomplete and already applied (by GTID) transactions."""

    def __init__(self, transaction_filter: TransactionFilter) -> None:
        self.filter = transaction_filter

    def handle(self, trx: Transaction, cont: Continuation) -> None:
        if self.filter.keeps_transaction(trx.gtid, trx.kind):
            self.next(trx, cont)
        else:
            cont.signal(discarded=True)


def run_pipeline(transactions: Iterable[Transaction], pipeline: EventHandler) -> int:
    """Feed every transaction through the chain; returns how many were discarded."""
    cont = Continuation()
    discarded = 0
    for trx in transactions:
        cont.signal()
        pipeline.handle(trx, cont)
        discarded += cont.transaction_discarded
    return discarded
