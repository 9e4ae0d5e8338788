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

from typing import NamedTuple

import numba
import numpy as np

from pymc_dp.mechanisms.base import kernel_logpdf
from pymc_dp.samplers.accept import nb_accept_prob
from pymc_dp.samplers.base import DPStep
from pymc_dp.samplers.records import RecordBlock, record_groups

__all__ = [
    "DataAugmentation", "AugmentationState", "AugmentationInfo", "augmentation_sweep",
    "augmentation_kernel", "MechanismTable",
]


class MechanismTable(NamedTuple):
    """Per-coordinate compiled-kernel parameters of the releases (see ``mechanisms.base``)."""

    codes: np.ndarray  # int64 (D,)
    a: np.ndarray  # float64 (D,)
    b: np.ndarray  # float64 (D,)
    c: np.ndarray  # float64 (D,): statistic = c * total (additive); unused for local


class AugmentationState(NamedTuple):
    """Per-record contributions of the current records and the record values (value space).

    ``t`` (n, D) additive contributions, ``l`` (n, L) local contributions, ``values`` one array per
    record variable (records on axis 0).
    """

    t: np.ndarray
    l: np.ndarray  # noqa: E741
    values: list


class AugmentationInfo(NamedTuple):
    """Summary of one sweep: accepted record moves and the smallest acceptance probability."""

    n_accepted: int
    min_accept_prob: float


@numba.njit(cache=True)
def augmentation_sweep(
    t_cur, t_prop, add_tab_codes, add_a, add_b, add_c, add_r,
    l_cur, l_prop, loc_codes, loc_a, loc_b, loc_r, rng, accepted,
):
    """One pass of Algorithm 1 over the records, in place (the compiled core of the kernel).

    ``t_cur``/``t_prop`` (n, D) additive contributions of the current and proposed records;
    ``l_cur``/``l_prop``/``loc_r`` (n, L) local contributions and releases; ``rng`` a NumPy
    ``Generator`` (one uniform per record, accept iff ``u < min(1, exp(ratio))`` with
    :func:`pymc_dp.samplers.accept.nb_accept_prob`; a NaN ratio rejects). Accepted rows of
    ``t_cur``/``l_cur`` are overwritten by the proposal and flagged in ``accepted``. Returns
    ``(n_accepted, min acceptance probability)``.
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
        p = nb_accept_prob(lr)
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


def augmentation_kernel(rng, state: AugmentationState, *, proposal, add_table, add_r, loc_table, loc_r):
    """One sweep of Algorithm 1: ``(rng, state, ...) -> (state, AugmentationInfo)``.

    ``proposal = (t_prop, l_prop, values_prop)``: contributions and values of one joint draw of all
    records from their conditional prior. The input state is not modified.
    """
    t_prop, l_prop, props = proposal
    t_cur, l_cur = state.t.copy(), state.l.copy()
    accepted = np.zeros(t_cur.shape[0], dtype=np.bool_)
    info = AugmentationInfo(*augmentation_sweep(
        t_cur, t_prop, *add_table[:3], add_table.c, add_r,
        l_cur, l_prop, *loc_table[:3], loc_r, rng, accepted,
    ))
    values = []
    for cur, prop in zip(state.values, props):
        mask = accepted.reshape((-1,) + (1,) * (prop.ndim - 1))
        values.append(np.where(mask, prop, cur))
    return AugmentationState(t_cur, l_cur, values), info


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


class _Group(NamedTuple):
    block: RecordBlock
    add_table: MechanismTable
    loc_table: MechanismTable


class DataAugmentation(DPStep):
    """Update latent confidential records by record-wise Metropolis-within-Gibbs (seed 003, Alg. 1).

    ``pm.sample()`` assigns this step by itself to latent records that feed ``DPObserved`` nodes
    with record-additive or local statistics (it is registered in ``pm.STEP_METHODS`` when
    ``pymc_dp`` is imported); θ keeps NUTS.

    Parameters
    ----------
    vars : list, optional
        The record variables (records on axis 0); several variables form one record (e.g. class
        and features). Default: every free variable that is the data of a ``DPObserved`` node.
        Records of unrelated releases (e.g. of different sizes) form separate groups, each swept
        in turn.
    sweeps : int
        Sweeps over all records per iteration.
    model : pm.Model, optional

    Sampler stats
    -------------
    ``dp_accept_rate``: fraction of record proposals accepted (over records, groups and sweeps);
    ``dp_min_accept``: smallest acceptance probability among them (≥ e^-ε for ε-DP releases).
    """

    name = "data_augmentation"
    dp_stats = {"dp_accept_rate": (float, []), "dp_min_accept": (float, [])}

    def __init__(self, vars=None, *, sweeps: int = 1, model=None, rng=None, blocked=True,
                 initial_point=None, compile_kwargs=None):
        import pymc as pm

        if not (isinstance(sweeps, int | np.integer) and not isinstance(sweeps, bool) and sweeps >= 1):
            raise ValueError(f"sweeps must be an integer >= 1, got sweeps={sweeps!r}.")
        model = pm.modelcontext(model)
        groups = record_groups(model, vars, owner="DataAugmentation")
        self.groups = []
        for rvs in groups:
            block = RecordBlock(model, rvs, require_additive=True, owner="DataAugmentation")
            self.groups.append(_Group(block, _table(block.additive_nodes, local=False),
                                      _table(block.local_nodes, local=True)))
        self.block = self.groups[0].block
        self.vars = [v for g in self.groups for v in g.block.value_vars]
        self.sweeps = int(sweeps)
        self._init_step(rng)

    def reseed(self, rng):
        for group in self.groups:
            group.block.reseed(rng)

    def step(self, point):
        n_acc, n_tot, min_p = 0, 0, 1.0
        work = dict(point)
        for group in self.groups:
            block = group.block
            names = block.value_names
            add_r, loc_r = block.releases()
            t_cur, l_cur = block.contributions(work)
            state = AugmentationState(t_cur, l_cur, [np.asarray(work[name]) for name in names])
            for _ in range(self.sweeps):
                props = block.propose(work)
                prop_point = dict(work)
                prop_point.update(zip(names, props))
                t_prop, l_prop = block.contributions(prop_point)
                state, info = augmentation_kernel(
                    self.rng, state, proposal=(t_prop, l_prop, props), add_table=group.add_table,
                    add_r=add_r, loc_table=group.loc_table, loc_r=loc_r,
                )
                work.update(zip(names, state.values))
                n_acc += info.n_accepted
                n_tot += block.n
                min_p = min(min_p, info.min_accept_prob)
        return work, [self.stats(dp_accept_rate=n_acc / n_tot, dp_min_accept=min_p)]

    @staticmethod
    def competence(var, has_grad):
        from pymc_dp.samplers.assign import augmentation_competence

        return augmentation_competence(var)
