r"""Shared machinery of the exact-approximate θ-steps (``PMMH``, ``MHAAR``).

A `LatentTarget` splits a PyMC model into

* θ: the user's ``vars`` (continuous, proposed by a random walk in PyMC's value space),
* the *latent*: the record block (or latent statistic, a one-"record" block) feeding the
  ``DPObserved`` nodes that depend on θ (found automatically),
* everything else, whose log density `\log \eta(\theta)` (prior of θ plus every term that is
  neither a latent record nor one of those releases) enters the acceptance ratio exactly,

and compiles what the kernels need: joint draws of the latent from its conditional prior given any θ
(reusing `pymc_dp.samplers.RecordBlock`), the releases' log density
`\log g(s_{dp} \mid x)` for one particle, the latent's log density `\log f(x \mid \theta)`
and, for z-space, `x = F_\theta^{-1}(z)` and `F_\theta(x)` (delegated to
`pymc_dp.samplers.inverse.RecordInverse`). It also holds the random-walk proposal and its warm-up tuning, shared by both steps.
"""

from __future__ import annotations

import math

import numpy as np
import pytensor.tensor as pt
from pymc.pytensorf import compile as pm_compile
from pymc.pytensorf import reseed_rngs
from pytensor.graph.replace import vectorize_graph

from pymc_dp.distributions.graph import depends_on, names, reads, releasing, upstream
from pymc_dp.samplers.inverse import RecordInverse, finite_support
from pymc_dp.samplers.particles import (
    estimate_log_lik,
    log_mean_exp,
    logsumexp0,
    pick_particle,
    sample_indices,
)
from pymc_dp.samplers.random_walk import (
    RandomWalkState,
    check_n_particles,
    clip_scale,
    initial_scale,
    random_walk_adapt,
    random_walk_propose,
)
from pymc_dp.samplers.records import RecordBlock, compile_record_draw, record_groups
from pymc_dp.samplers.target import ReleaseTarget

__all__ = [
    "LatentTarget",
    "RandomWalkState",
    "random_walk_propose",
    "random_walk_adapt",
    "initial_scale",
    "clip_scale",
    "sample_indices",
    "logsumexp0",
    "log_mean_exp",
    "estimate_log_lik",
    "pick_particle",
    "check_n_particles",
]


# ----------------------------------------------------------------------------------------------
# model side
# ----------------------------------------------------------------------------------------------
class LatentTarget(ReleaseTarget):
    """θ, the latent block it drives and compiled evaluators (see module docstring).

    θ, the latent records and their releases are found by `pymc_dp.samplers.target.ReleaseTarget`
    (the latent defaults to every free record of a release that depends on θ); the records' draws
    and per-record statistics are those of a `pymc_dp.samplers.records.RecordBlock`.

    Parameters
    ----------
    model : pm.Model
    vars : list
        θ: the continuous variables the step proposes.
    latent : list, optional
        The latent records / statistic; default: the data of every ``DPObserved`` node that
        depends on θ.
    owner : str
        Sampler name for messages.
    rng : numpy.random.Generator or int, optional
        The step's generator, for the record block's construction-time check
        (`pymc_dp.samplers.records.RecordBlock`).
    """

    def __init__(
        self,
        model,
        vars,
        *,
        latent=None,
        owner="PMMH",
        own_parents=False,
        max_support=64,
        rng=None,
    ):
        super().__init__(
            model,
            vars,
            latent,
            owner=owner,
            move="proposes θ by a Gaussian random walk",
            argument="latent",
            whole_releases=True,
        )
        latent_rvs = self.record_rvs
        nodes = self.nodes
        if own_parents:
            self._require_owned_parents(latent_rvs, nodes)
        self._check_mechanisms(self.release_nodes)
        self.block = RecordBlock(model, latent_rvs, require_additive=False, owner=owner, rng=rng)
        records = set(latent_rvs)
        #: every free parent of the latent's distribution (θ and whatever other samplers move)
        self.parent_names = [
            model.rvs_to_values[r].name
            for r in reads(latent_rvs, model.free_RVs)
            if r not in records
        ]
        self._find_groups(latent_rvs)
        self._compile()
        self.support = None
        self._max_support = int(max_support)
        rv = latent_rvs[0]
        if (
            self.all_local
            and len(latent_rvs) == 1
            and rv.ndim == 1
            and model.rvs_to_transforms.get(rv) is None
        ):
            self.support = finite_support(rv, model, int(max_support))

    # ------------------------------------------------------------------------------------------
    def _find_groups(self, latent_rvs):
        r"""Split the latent into record groups (`records.record_groups`) and decide whether
        the releases' likelihood factors over them: it does when no release reads two groups (true
        by construction of the groups) and no record variable of one group is an input of another
        group's records, so that, given θ and every other free variable, the groups are independent
        and `p(s_{dp}\mid\theta) = \prod_g p(s_g\mid\theta)`."""
        groups = record_groups(self.model, latent_rvs, owner=self.owner)
        self.groups = groups
        where = {r: g for g, rvs in enumerate(groups) for r in rvs}
        #: group index of each latent variable, in block order
        self.group_index = [where[r] for r in self.block.record_rvs]
        linked = []
        for g, rvs in enumerate(groups):
            anc = upstream(rvs)
            linked += [
                (r, rvs[0]) for h, other in enumerate(groups) if h != g for r in other if r in anc
            ]
        if len(groups) < 2:
            self.groups_independent = False
            self.group_reason = "one record group"
        elif linked:
            r, o = linked[0]
            self.groups_independent = False
            self.group_reason = (
                f"record groups are not independent given θ: {o.name!r} depends "
                f"on {r.name!r} of another group"
            )
        else:
            self.groups_independent = True
            self.group_reason = f"{len(groups)} independent record groups: " + "; ".join(
                "[" + names(rvs) + "]" for rvs in groups
            )

    def _check_mechanisms(self, nodes):
        """Refuse releases whose mechanism cannot evaluate its density."""
        for node in nodes:
            mech = node.mechanism
            n_params = 2 if getattr(mech, "dist_params", None) is not None else 1
            try:
                mech.logp(pt.dscalar(), *[pt.dscalar() for _ in range(n_params)])
            except (NotImplementedError, TypeError, ValueError) as err:
                raise ValueError(
                    f"{self.owner} needs the density of the release, but the mechanism "
                    f"{mech!r} of DPObserved {node.rv.name!r} cannot evaluate one ({err!r}). Use a "
                    "mechanism with a density (pdp.Laplace, pdp.Gaussian, pdp.SmoothLaplace, ...) "
                    "or implement its logp/kernel_params."
                ) from None

    def _require_owned_parents(self, latent_rvs, nodes):
        """Pseudo-marginal: every free parent of the latent must be proposed by this step."""
        model = self.model
        records = set(latent_rvs)
        fed = [nd.rv for nd in releasing(nodes, records)]
        parents = [v for v in reads(list(latent_rvs) + fed, model.free_RVs) if v not in records]
        missing = [p for p in parents if p not in set(self.theta_rvs)]
        if missing:
            raise ValueError(
                f"{self.owner} carries its estimate of p(s_dp | θ) between iterations, so it must "
                f"own every free variable the latent data depend on; {names(missing)} is missing "
                f"from vars={names(self.theta_rvs)}. Pass vars=[{names(self.theta_rvs + missing)}]."
            )

    def _compile(self):
        model = self.model
        block = self.block
        own = set(block.record_rvs) | {node.rv for node in block.nodes}
        rest = [v for v in model.free_RVs + model.observed_RVs if v not in own]
        rest += list(model.potentials)
        inputs = model.value_vars
        rest_logp = model.logp(vars=rest, sum=True) if rest else pt.constant(0.0)
        self._rest_logp = pm_compile(inputs, rest_logp, on_unused_input="ignore")

        n = block.n
        add_terms, loc_terms = [], []
        for node in block.nodes:
            (term,) = model.logp(vars=[node.rv], sum=False)
            if node.statistic.local:
                loc_terms.append(pt.reshape(term, (n, -1)).sum(axis=1))
            else:
                add_terms.append(term.sum())
        self.has_local = bool(loc_terms)
        self.all_local = not add_terms
        total = pt.add(*add_terms) if add_terms else pt.constant(0.0)
        per_record = pt.add(*loc_terms) if loc_terms else pt.zeros((n,))
        self._loglik = pm_compile(
            inputs,
            [pt.cast(total, "float64"), pt.cast(per_record, "float64")],
            on_unused_input="ignore",
        )
        # per record group: every release term reading the group (aggregate and local), (G,)
        group_terms = [[] for _ in self.groups]
        gi = dict(zip(block.record_rvs, self.group_index))
        for node in block.nodes:
            (term,) = model.logp(vars=[node.rv], sum=False)
            group_terms[gi[next(d for d in node.data if d in gi)]].append(
                pt.cast(term.sum(), "float64")
            )
        by_group = pt.stack(
            [pt.add(*t) if t else pt.constant(0.0, dtype="float64") for t in group_terms]
        )
        self._group_ll = pm_compile(inputs, by_group, on_unused_input="ignore")
        rec_terms = model.logp(vars=block.record_rvs, sum=False)
        rec = pt.add(*[pt.reshape(t, (n, -1)).sum(axis=1) for t in rec_terms])
        self._latent_logp = pm_compile(inputs, pt.cast(rec, "float64"), on_unused_input="ignore")
        self._zmap = None  # z-space maps, compiled on demand (compile_z_space)
        self._batch_draw = None
        self._draw_rngs = []
        # particles evaluated in one call: the same graphs vectorized over a leading particle axis
        latent_values = set(block.value_vars)
        self._batch_inputs = [v for v in inputs if v not in latent_values]
        self._batch_names = [v.name for v in self._batch_inputs]
        batched = [
            pt.tensor(f"{v.name}_particles", dtype=v.dtype, shape=(None, *v.type.shape))
            for v in block.value_vars
        ]
        try:
            outs = vectorize_graph(
                [
                    pt.cast(total, "float64"),
                    pt.cast(per_record, "float64"),
                    pt.cast(rec, "float64"),
                ],
                replace=dict(zip(block.value_vars, batched)),
            )
            self._batch_eval = pm_compile(
                self._batch_inputs + batched, outs, on_unused_input="ignore"
            )
            (grp,) = vectorize_graph([by_group], replace=dict(zip(block.value_vars, batched)))
            self._batch_groups = pm_compile(
                self._batch_inputs + batched, grp, on_unused_input="ignore"
            )
        except Exception:  # noqa: BLE001  # pragma: no cover - graphs PyTensor cannot vectorize: loop instead
            self._batch_eval = self._batch_groups = None

    def compile_batch_draw(self, n_draws: int):
        """Compile ``n_draws`` joint draws of the latent from its conditional prior in one call."""
        from pymc.distributions.shape_utils import change_dist_size

        model = self.model
        recs = self.block.record_rvs
        if any(depends_on(o, [r]) for r in recs for o in recs if o is not r):
            self._batch_draw = None  # records drawn jointly from each other: one draw per particle
            return
        try:
            big = [change_dist_size(rv, (n_draws,), expand=True) for rv in recs]
            self._batch_draw, self._draw_rngs = compile_record_draw(model, recs, big)
            self._n_batch = n_draws
        except Exception:  # noqa: BLE001  # pragma: no cover - fall back to one compiled draw per particle
            self._batch_draw = None

    def reseed(self, rng):
        """Reseed every compiled random graph from ``rng``."""
        self.block.reseed(rng)
        if self._draw_rngs:
            reseed_rngs(self._draw_rngs, rng.integers(2**63))

    def compile_z_space(self):
        """Compile the z-space maps of the records (`RecordInverse`)."""
        if self._zmap is None:
            self._zmap = RecordInverse(
                self.model,
                self.block.record_rvs,
                self.block.value_names,
                owner=self.owner,
                max_support=self._max_support,
            )

    # -- point helpers -------------------------------------------------------------------------
    def with_latent(self, point, values) -> dict:
        out = dict(point)
        out.update(zip(self.block.value_names, values))
        return out

    def latent_of(self, point):
        return [np.array(point[n], copy=True) for n in self.block.value_names]

    # -- evaluators ----------------------------------------------------------------------------
    def log_rest(self, point) -> float:
        """log η(θ): every term except the latent records and the releases they feed."""
        return float(self._rest_logp(*self.args(point)))

    def loglik(self, point):
        """``(log g of the aggregate releases, per-record log g of the local releases (n,))``."""
        total, per = self._loglik(*self.args(point))
        return float(total), np.asarray(per, dtype=float)

    def loglik_total(self, point) -> float:
        total, per = self.loglik(point)
        return total + float(per.sum())

    def latent_logp(self, point) -> np.ndarray:
        """Per-record log f(x_i | θ) (value space, with Jacobian), shape (n,)."""
        return np.asarray(self._latent_logp(*self.args(point)), dtype=float)

    def draw(self, point):
        """One joint draw of the latent from its conditional prior given the θ in ``point``."""
        return self.block.propose(point)

    def draws(self, point, n_draws):
        """``n_draws`` joint draws, one array ``(n_draws, n, ...)`` per latent variable."""
        if self._batch_draw is not None and n_draws == self._n_batch:
            return [np.asarray(d) for d in self._batch_draw(*self.args(point))]
        parts = [self.draw(point) for _ in range(n_draws)]
        return [np.stack([p[r] for p in parts]) for r in range(len(self.block.value_vars))]

    def evaluate(self, point, particles):
        """For particles ``[(N, n, ...)]``: aggregate log g (N,), local log g (N, n), log f (N, n)."""
        if self._batch_eval is not None:
            tot, per, rec = self._batch_eval(*[point[n] for n in self._batch_names], *particles)
            N, n = particles[0].shape[0], self.block.n
            return (
                np.broadcast_to(np.asarray(tot, float), (N,)),
                np.broadcast_to(np.asarray(per, float), (N, n)),
                np.broadcast_to(np.asarray(rec, float), (N, n)),
            )
        N = particles[0].shape[0]
        tot, per, rec = np.empty(N), np.empty((N, self.block.n)), np.empty((N, self.block.n))
        for j in range(N):
            pj = self.with_latent(point, [p[j] for p in particles])
            tot[j], per[j] = self.loglik(pj)
            rec[j] = self.latent_logp(pj)
        return tot, per, rec

    def evaluate_groups(self, point, particles):
        """For particles ``[(N, n, ...)]``: log g of the releases of each record group, (N, G)."""
        N, G = particles[0].shape[0], len(self.groups)
        if self._batch_groups is not None:
            out = self._batch_groups(*[point[n] for n in self._batch_names], *particles)
            return np.broadcast_to(np.asarray(out, float), (N, G))
        out = np.empty((N, G))
        for j in range(N):
            out[j] = self._group_ll(*self.args(self.with_latent(point, [p[j] for p in particles])))
        return out

    @property
    def factorisation(self) -> str:
        r"""How `particle_weights` estimates `p(s_{dp}\mid\theta)`: ``"support"`` (exact
        sum over a finite record support), ``"records"`` (product over records of per-record
        particle averages, local releases), ``"groups"`` (product over independent record groups)
        or ``"joint"`` (one average over whole-latent particles)."""
        if self.support is not None:
            return "support"
        if self.all_local:
            return "records"
        return "groups" if self.groups_independent else "joint"

    def pick_groups(self, parts):
        """``k (G,) -> latent``: each variable's values from the particle chosen for its group."""
        gi = self.group_index
        return lambda k: [P[int(np.asarray(k)[g])] for P, g in zip(parts, gi)]

    def icdf(self, point, zs):
        """Latent values (value space) for uniforms ``zs`` (one (N, n, ...) array per record RV)."""
        return self._zmap.icdf(self.args(point), zs)

    def z_of(self, point, rng):
        """Uniforms generating the records in ``point`` (see `RecordInverse.z_of`)."""
        return self._zmap.z_of(self.args(point), point, rng)

    # -- particles of the likelihood estimate ------------------------------------------------
    def latent_key(self, point):
        """Values of every input of the latent's distribution and of the latent itself."""
        return [np.array(point[n], copy=True) for n in self.parent_names + self.block.value_names]

    def particle_weights(self, point, n_particles):
        r"""Log weights and particles of the conditional-prior estimate of `p(s_{dp}\mid\theta)`.

        * finite record support (local releases): ``log_w`` (K, n), `\log f(v_k\mid\theta) +
          \log g(s_i\mid v_k) + \log K` over the support values `v_k`, so that
          `estimate_log_lik` gives the exact `\sum_i \log\sum_k f g`;
        * local releases: ``log_w`` (N, n) per-record weights `g(s_i\mid x_i^{(j)})`;
        * independent record groups (`groups_independent`): ``log_w`` (N, G), the releases'
          density `g(s_g\mid x_g^{(j)})` of each group g, so that the estimate is
          `\prod_g \frac1N\sum_j g(s_g\mid x_g^{(j)})` — unbiased because the groups are
          independent given θ; the variance of its log is the sum of the groups' (each from N
          particles) instead of that of one average of products;
        * otherwise ``log_w`` (N,), `g(s_{dp}\mid x^{(j)})`.
        """
        n = self.block.n
        idx = np.arange(n)
        if self.support is not None:
            K = self.support.size
            vals = np.broadcast_to(self.support[:, None], (K, n))
            _, per, rec = self.evaluate(point, [np.ascontiguousarray(vals)])
            log_w = rec + per + math.log(K)
            return log_w, lambda k: [np.asarray(self.support[k])]
        parts = self.draws(point, n_particles)
        if not self.all_local and self.groups_independent:
            return self.evaluate_groups(point, parts), self.pick_groups(parts)
        total, per, _ = self.evaluate(point, parts)
        if self.all_local:
            return per, lambda k: [P[k, idx] for P in parts]
        return total + per.sum(axis=1), [[p[j] for p in parts] for j in range(n_particles)]
