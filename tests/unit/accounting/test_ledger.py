"""The chain ledger of a budget shared by chains (`pymc_dp.accounting.ledger`): at most ``slots``
claims, whatever process makes them; copies share it; removal frees the files."""

import multiprocessing as mp
import pickle

from pymc_dp.accounting.ledger import ChainLedger


def _claim(ledger, out):
    out.put(ledger.claim())


def test_at_most_slots_claims_across_processes():
    ledger = ChainLedger(2)
    ctx = mp.get_context("fork")
    out = ctx.Queue()
    procs = [
        ctx.Process(target=_claim, args=(pickle.loads(pickle.dumps(ledger)), out)) for _ in range(5)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(30)
    got = sorted((out.get(timeout=5) for _ in procs), key=lambda v: (v is None, v))
    assert got[:2] == [0, 1] and got[2:] == [None, None, None]
    assert ledger.claimed() == 2 and ledger.claim() is None
    ledger.remove()
    assert ledger.claimed() == 0
    assert ChainLedger(2).token != ledger.token  # a new ledger, a new budget
