r"""Record-wise data augmentation for privatized releases (seed 003, Ju et al., Algorithm 1).

Target: the joint posterior :math:`p(\theta, x \mid s_{dp}) \propto p(\theta) \prod_i f(x_i \mid
\theta)\, \eta(s_{dp} \mid S(x))`. For each record :math:`i` in turn, propose :math:`x_i^*` from its
conditional prior :math:`f(\cdot \mid \theta)` and accept with probability

.. math:: \min\Big(1, \frac{\eta(s_{dp} \mid S(x_{-i}, x_i^*))}{\eta(s_{dp} \mid S(x))}\Big),

the prior cancelling against the proposal. For a record-additive statistic
:math:`S(x) = c\sum_i t(x_i)` the ratio needs only the running total, so a sweep over all records
costs :math:`O(n)`; a local release (one per record) involves only the record's own release. With an
ε-DP mechanism every acceptance probability is at least :math:`e^{-\varepsilon}` (Proposition 3.1).
θ is left to PyMC's samplers (NUTS, Metropolis, a conjugate step).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np
from pymc.step_methods.compound import BlockedStep, Competence, StepMethodState

from pymc_dp.mechanisms.base import kernel_logpdf
from pymc_dp.samplers.records import RecordBlock

__all__ = ["DataAugmentation", "AugmentationInfo", "augmentation_sweep", "MechanismTable"]


class MechanismTable(NamedTuple):
    """Per-coordinate compiled-kernel parameters of the releases (see ``mechanisms.base``)."""

    codes: np.ndarray  # int64 (D,)
    a: np.ndarray  # float64 (D,)
    b: np.ndarray  # float64 (D,)
    c: np.ndarray  # float64 (D,): statistic = c * total (additive); unused for local


class AugmentationInfo(NamedTuple):
    """Summary of one sweep: mean acceptance and the smallest acceptance probability."""

    n_accepted: int
    min_accept_prob: float


@numba.njit(cache=True)
def augmentation_sweep(
    t_cur, t_prop, add_tab_codes, add_a, add_b, add_c, add_r,
    l_cur, l_prop, loc_codes, loc_a, loc_b, loc_r, rng, accepted,
):
    """One pass of Algorithm 1 over the records, in place.

    ``t_cur``/``t_prop`` (n, D) additive contributions of the current and proposed records;
    ``l_cur``/``l_prop``/``loc_r`` (n, L) local contributions and releases; ``rng`` a NumPy
    ``Generator`` (one uniform per record, accept iff ``u < exp(ratio)``). Accepted rows of ``t_cur``/``l_cur`` are overwritten by the proposal and flagged in
    ``accepted``. Returns ``(n_accepted, min acceptance probability)``. A NaN ratio rejects.
    """
    n, D = t_cur.shape
    L = l_cur.shape[1]
    total = np.zeros(D)
    for i in range(n):
        for j in range(D):
            total[j] += t_cur[i, j]
    cur_lp = np.empty(D)
    new_lp = np.empty(D)
    for j in range(D):
        cur_lp[j] = kernel_logpdf(add_tab_codes[j], add_a[j], add_b[j], add_r[j] - add_c[j] * total[j])
    n_acc = 0
    min_p = 1.0
    for i in range(n):
        lr = 0.0
        for j in range(L):
            lr += kernel_logpdf(loc_codes[j], loc_a[j], loc_b[j], loc_r[i, j] - l_prop[i, j])
            lr -= kernel_logpdf(loc_codes[j], loc_a[j], loc_b[j], loc_r[i, j] - l_cur[i, j])
        for j in range(D):
            new_total = total[j] - t_cur[i, j] + t_prop[i, j]
            new_lp[j] = kernel_logpdf(add_tab_codes[j], add_a[j], add_b[j], add_r[j] - add_c[j] * new_total)
            lr += new_lp[j] - cur_lp[j]
        if lr != lr:  # NaN rejects
            p = 0.0
        elif lr >= 0.0:
            p = 1.0
        else:
            p = math.exp(lr)
        if p < min_p:
            min_p = p
        if rng.random() < p:
            accepted[i] = True
            n_acc += 1
            for j in range(D):
                total[j] += t_prop[i, j] - t_cur[i, j]
                t_cur[i, j] = t_prop[i, j]
                cur_lp[j] = new_lp[j]
            for j in range(L):
                l_cur[i, j] = l_prop[i, j]
    return n_acc, min_p


def _table(nodes, local):
    codes, a, b, c = [], [], [], []
    for node in nodes:
        pa, pb = node.mechanism.kernel_params()
        k = node.dim
        codes += [node.mechanism.kernel_code] * k
        a += [pa] * k
        b += [pb] * k
        c += [1.0 if local else node.statistic.factor(node.n)] * k
    return MechanismTable(
        np.asarray(codes, dtype=np.int64), np.asarray(a, dtype=np.float64),
        np.asarray(b, dtype=np.float64), np.asarray(c, dtype=np.float64),
    )


class DataAugmentation(BlockedStep):
    """Update latent confidential records by record-wise Metropolis-within-Gibbs (seed 003, Alg. 1).

    Parameters
    ----------
    vars : list, optional
        The record variables (records on axis 0); several variables form one record (e.g. class
        and features). Default: every free variable that is the data of a ``DPObserved`` node.
    sweeps : int
        Sweeps over all records per iteration.
    model : pm.Model, optional

    Sampler stats
    -------------
    ``dp_accept_rate``: fraction of record proposals accepted (over records and sweeps);
    ``dp_min_accept``: smallest acceptance probability among them (≥ e^-ε for ε-DP releases).
    """

    name = "data_augmentation"
    stats_dtypes_shapes = {
        "dp_accept_rate": (float, []),
        "dp_min_accept": (float, []),
        "tune": (bool, []),
    }
    _state_class = StepMethodState

    def __init__(self, vars=None, *, sweeps: int = 1, model=None, rng=None, blocked=True):
        import pymc as pm

        if not (isinstance(sweeps, int | np.integer) and sweeps >= 1):
            raise ValueError(f"sweeps must be an integer >= 1, got sweeps={sweeps!r}.")
        model = pm.modelcontext(model)
        self.block = RecordBlock(model, vars, require_additive=True, owner="DataAugmentation")
        self.vars = self.block.value_vars
        self.sweeps = int(sweeps)
        self.tune = True
        self.add_table = _table(self.block.additive_nodes, local=False)
        self.loc_table = _table(self.block.local_nodes, local=True)
        self.set_rng(rng)

    # PyMC <= 6.2
    def set_rng(self, rng):
        from pymc.util import get_random_generator

        self.rng = get_random_generator(rng, copy=False)
        self.block.reseed(self.rng)

    # PyMC >= 6.3
    def setup_chain(self, rng, tune, draws):
        self.set_rng(rng)
        self.tune = tune > 0

    def step(self, point):
        block = self.block
        names = block.value_names
        add_r, loc_r = block.releases()
        t_cur, l_cur = block.contributions(point)
        values = {name: np.array(point[name], copy=True) for name in names}
        n_acc, min_p = 0, 1.0
        work = dict(point)
        for _ in range(self.sweeps):
            work.update(values)
            props = block.propose(work)
            prop_point = dict(work)
            prop_point.update(zip(names, props))
            t_prop, l_prop = block.contributions(prop_point)
            accepted = np.zeros(block.n, dtype=np.bool_)
            info = AugmentationInfo(*augmentation_sweep(
                t_cur, t_prop, *self.add_table[:3], self.add_table.c, add_r,
                l_cur, l_prop, *self.loc_table[:3], loc_r, self.rng, accepted,
            ))
            n_acc += info.n_accepted
            min_p = min(min_p, info.min_accept_prob)
            for name, prop in zip(names, props):
                mask = accepted.reshape((-1,) + (1,) * (prop.ndim - 1))
                np.copyto(values[name], prop, where=mask)
        stats = {
            "dp_accept_rate": n_acc / (block.n * self.sweeps),
            "dp_min_accept": min_p,
            "tune": bool(self.tune),
        }
        return {**point, **values}, [stats]

    @staticmethod
    def competence(var, has_grad):
        return Competence.INCOMPATIBLE
