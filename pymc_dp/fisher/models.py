r"""What the Fisher information is computed from: moments of ``s(X)`` or the population itself.

Seed 001 §3.1 (seed 000 §4.2.1): for an additive statistic `S_n = \frac1n\sum_i s(X_i)` the
central limit theorem gives `S_n \approx \mathcal N(\mu_s(\theta), \Sigma_s(\theta)/n)` with

```text
\mu_s(\theta) = \mathbb E_\theta[s(X)], \qquad \Sigma_s(\theta) = \operatorname{Var}_\theta[s(X)].
```

`Moments` holds user-given `\mu_s, \Sigma_s` as PyTensor functions of θ and returns them
with their θ-derivatives by PyTensor autodiff; `QuadratureMoments` computes the same four
quantities by quadrature from a `Population` (differentiating under the integral,
`\partial_\theta \mathbb E[g(X)] = \mathbb E[g(X)\,\partial_\theta \log p(X\mid\theta)]`, valid
when the support of X does not depend on θ). `Population` wraps a PyMC distribution of one
record given θ: draws of whole databases and the score
`\sum_t \partial_\theta \log p(x_t \mid \theta)` by autodiff (seed 001 Algorithms 2 and 3).

The helpers ``normal_mean_example``, ``normal_variance_example``, ``uniform_width_example`` and
``bernoulli_example`` are seed 001 Examples 1–3 and the mean/variance of Example 4.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytensor
import pytensor.tensor as pt
from scipy import integrate

from pymc_dp._checks import child_rng
from pymc_dp.distributions.clt import (
    bernoulli_moments,
    check_moment_power,
    normal_mean_moments,
    normal_variance_moments,
    uniform_width_moments,
)
from pymc_dp.fisher._validate import check_theta_bounds, theta_array

__all__ = [
    "Moments",
    "Population",
    "QuadratureMoments",
    "bernoulli_example",
    "normal_mean_example",
    "normal_variance_example",
    "uniform_width_example",
]

_MODE = (
    "FAST_COMPILE"  # small elementwise graphs: the Python linker compiles in well under a second
)


class Moments:
    r"""Mean and covariance of the per-record statistic ``s(X)`` as PyTensor functions of θ.

    Parameters
    ----------
    mean : callable
        ``mean(theta)`` → `\mu_s(\theta)`, a PyTensor scalar or vector of length ``d_s``.
    cov : callable
        ``cov(theta)`` → `\Sigma_s(\theta)`, a scalar (``d_s = 1``) or a ``(d_s, d_s)`` matrix.
    n_params : int, optional
        Number of parameters ``d``. ``None`` (default): θ is a scalar and the callables receive a
        scalar tensor; otherwise they receive a vector tensor of length ``d``.
    theta_bounds : tuple, optional
        ``(lower, upper)`` of the open parameter support (``None`` for unbounded sides).
    name : str, optional

    Notes
    -----
    `evaluate` returns ``(mu, Sigma, dmu, dSigma)`` with shapes ``(d_s,)``, ``(d_s, d_s)``,
    ``(d_s, d)`` and ``(d_s, d_s, d)``, the derivatives by ``pytensor.gradient.jacobian``.
    """

    def __init__(self, mean, cov, *, n_params=None, theta_bounds=None, name=None):
        if not callable(mean) or not callable(cov):
            raise TypeError(
                f"Moments needs callables mean(theta) and cov(theta), got mean={mean!r}, "
                f"cov={cov!r}. Write them with pytensor.tensor operations, e.g. "
                "Moments(lambda t: t, lambda t: 1.0 + 0 * t)."
            )
        self.mean, self.cov = mean, cov
        self.n_params = None if n_params is None else int(n_params)
        self.theta_bounds = theta_bounds
        self.name = name or "Moments"
        self._fn = None

    @classmethod
    def from_pair(cls, fn, **kwargs):
        """Moments from one callable ``fn(theta) -> (mu_s, Sigma_s)``, e.g.
        ``Moments.from_pair(lambda t: pdp.normal_variance_moments(t, a=1))``."""
        return cls(lambda t: fn(t)[0], lambda t: fn(t)[1], **kwargs)

    @property
    def d(self) -> int:
        return 1 if self.n_params is None else self.n_params

    def _compile(self):
        th = pt.tensor("theta", shape=(self.d,), dtype="float64")
        arg = th[0] if self.n_params is None else th
        mu = pt.cast(pt.as_tensor_variable(self.mean(arg)), "float64")
        cov = pt.cast(pt.as_tensor_variable(self.cov(arg)), "float64")
        if mu.ndim > 1 or cov.ndim not in (0, 2):
            raise ValueError(
                f"{self.name}: mean(theta) must be a scalar or vector and cov(theta) a scalar or "
                f"matrix, got ndim {mu.ndim} and {cov.ndim}. Return mu_s with shape (d_s,) and "
                "Sigma_s with shape (d_s, d_s)."
            )
        mu = pt.stack([mu]) if mu.ndim == 0 else mu
        cov = pt.stack([pt.stack([cov])]) if cov.ndim == 0 else cov
        dmu = _jacobian(mu, th, self._static_len(mu, th))
        dcov = _jacobian(cov.ravel(), th, self._static_len(cov.ravel(), th))
        self._fn = pytensor.function(
            [th], [mu, cov, dmu, dcov], mode=_MODE, on_unused_input="ignore"
        )

    def _static_len(self, v, th):
        """Length of the vector ``v`` (static, or evaluated once at a dummy θ)."""
        if v.type.shape[0] is not None:
            return int(v.type.shape[0])
        fn = pytensor.function([th], v.shape[0], mode=_MODE, on_unused_input="ignore")
        return int(fn(np.ones(self.d)))

    def evaluate(self, theta):
        """``(mu, Sigma, dmu, dSigma)`` at ``theta`` (see class notes); checks θ's support."""
        arr = theta_array(theta, self.n_params, owner=self.name)
        check_theta_bounds(arr, self.theta_bounds, owner=self.name, theta=theta)
        if self._fn is None:
            self._compile()
        mu, cov, dmu, dcov = (np.asarray(v, dtype=float) for v in self._fn(arr))
        ds = mu.shape[0]
        if cov.shape != (ds, ds):
            raise ValueError(
                f"{self.name}: cov(theta) has shape {cov.shape} but mean(theta) has length {ds}. "
                "Return a (d_s, d_s) covariance matching the mean."
            )
        _check_finite_psd(mu, cov, dmu, dcov, owner=self.name, theta=theta)
        return mu, cov, dmu, dcov.reshape(ds, ds, self.d)

    def __repr__(self):
        return f"Moments(name={self.name!r}, n_params={self.n_params})"


def _jacobian(vec, wrt, length):
    """Rows ``d vec[i] / d wrt`` stacked (no scan: ``length`` is small)."""
    rows = [pytensor.grad(vec[i], wrt, disconnected_inputs="ignore") for i in range(length)]
    return pt.stack(rows)


def _check_finite_psd(mu, cov, dmu, dcov, *, owner, theta):
    finite = all(np.all(np.isfinite(v)) for v in (mu, cov, dmu, dcov))
    if not finite or np.any(
        np.linalg.eigvalsh(0.5 * (cov + cov.T)) < -1e-12 * max(1.0, np.abs(cov).max())
    ):
        raise ValueError(
            f"theta={theta!r} is outside the support of {owner}: the moments of s(X) there are "
            f"not finite or the covariance is not positive semi-definite (mu={mu.tolist()}). Pass "
            "a parameter value inside the population's parameter space."
        )


class Population:
    r"""The distribution of one confidential record given θ, as a PyMC distribution.

    Parameters
    ----------
    dist : PyMC distribution class
        For example ``pm.Normal``.
    params : callable
        ``params(theta)`` → dict of keyword arguments of ``dist``, elementwise in θ. For scalar θ,
        ``theta`` is a tensor that may have any shape broadcastable against the records; for
        ``n_params=d`` it is indexable, ``theta[k]`` being such a tensor (also a PyMC random
        variable of shape ``(d,)`` inside a model).
    n_params : int, optional
        ``None`` (default) for scalar θ.
    theta_bounds : tuple, optional
        ``(lower, upper)`` of the open parameter support, checked before any computation.
    name : str, optional

    Examples
    --------
    >>> Population(pm.Normal, lambda t: {"mu": 0.0, "sigma": pt.sqrt(t)}, theta_bounds=(0, None))
    """

    def __init__(self, dist, params, *, n_params=None, theta_bounds=None, name=None):
        if not hasattr(dist, "dist"):
            raise TypeError(
                f"dist must be a PyMC distribution class such as pm.Normal, got dist={dist!r}."
            )
        if not callable(params):
            raise TypeError(
                f"params must be a callable theta -> dict of {dist.__name__} arguments, got "
                f"params={params!r}. For example params=lambda t: {{'mu': t, 'sigma': 1.0}}."
            )
        self.dist, self.params = dist, params
        self.n_params = None if n_params is None else int(n_params)
        self.theta_bounds = theta_bounds
        self.name = name or f"Population({dist.__name__})"
        self._score_fn = None
        self._draw_fn = None
        self._rngs = None

    @property
    def d(self) -> int:
        return 1 if self.n_params is None else self.n_params

    def _theta_arg(self, th):
        return th[0] if self.n_params is None else th

    def rv(self, name, theta, **kwargs):
        """Register the records as a model random variable (inside a ``pm.Model``)."""
        return self.dist(name, **self.params(theta), **kwargs)

    def _prototype(self):
        """One symbolic record variable at a symbolic θ (shape ``(d, B, 1)``, as in `score`)."""
        th = pt.tensor("theta_rep", shape=(self.d, None, 1), dtype="float64")
        return th, self.dist.dist(**self.params(self._theta_arg(th)))

    def record_type(self) -> tuple[str, int]:
        """``(dtype, ndim_supp)`` of one record: ``"int64"`` for discrete distributions
        (``pm.Poisson``, ``pm.Bernoulli``), and the number of dimensions of one record's support
        (0 for a scalar record, 1 for ``pm.MvNormal``). No compilation."""
        _, proto = self._prototype()
        return str(proto.dtype), int(getattr(proto.owner.op, "ndim_supp", 0))

    # -- compiled pieces ---------------------------------------------------------------------
    def _compile_score(self):
        import pymc as pm

        th, proto = self._prototype()
        x = pt.tensor("x", shape=(None, None), dtype=proto.dtype)
        lp = pm.logp(proto, x)
        total = lp.sum()
        score = pytensor.grad(total, th, disconnected_inputs="ignore")[:, :, 0].T
        self._score_fn = pytensor.function([th, x], [score, lp.sum(axis=1)], mode=_MODE)

    def _compile_draw(self):
        from pymc.pytensorf import compile as pm_compile

        th = pt.dvector("theta")
        rows, cols = pt.iscalar("rows"), pt.iscalar("cols")
        draws = self.dist.dist(**self.params(self._theta_arg(th)), size=(rows, cols))
        # the generators start from fresh entropy: `draw` reseeds them from its rng at every call
        self._draw_fn = pm_compile([th, rows, cols], draws, mode=_MODE)
        self._rngs = [
            i.variable for i in self._draw_fn.maker.inputs if getattr(i, "implicit", False)
        ]

    def score(self, theta, x):
        r"""Per-database score `\sum_t \partial_\theta \log p(x_{bt}\mid\theta)`, shape ``(B, d)``,
        and log density ``(B,)`` of records ``x`` with shape ``(B, n)``."""
        from pymc.logprob.utils import ParameterValueError

        if self._score_fn is None:
            self._compile_score()
        x = np.asarray(x)
        rep = np.broadcast_to(np.asarray(theta, float)[:, None, None], (self.d, x.shape[0], 1))
        try:
            sc, lp = self._score_fn(np.ascontiguousarray(rep), x)
        except ParameterValueError as err:
            raise ValueError(
                f"theta={theta.tolist()} is outside the support of {self.name} ({err}). Pass a "
                "parameter value inside the population's parameter space."
            ) from None
        return np.asarray(sc), np.asarray(lp)

    def draw(self, theta, rows, cols, rng: np.random.Generator):
        """``rows × cols`` records drawn iid at ``theta`` with ``rng``."""
        if self._draw_fn is None:
            self._compile_draw()
        from pymc.pytensorf import reseed_rngs

        reseed_rngs(self._rngs, int(rng.integers(2**62)))
        return np.asarray(self._draw_fn(np.asarray(theta, float), int(rows), int(cols)))

    def check_theta(self, theta, *, rng=None):
        """θ as an array after checking the declared bounds and that the density is finite.

        The check draws 8 records at θ from a child of ``rng`` (`pymc_dp._checks.child_rng`,
        ``None``: fresh entropy). It is a support probe: inside the support every draw has a finite
        density, and outside it the draw or the density fails whatever the records, so the verdict
        does not depend on the draws (``tests/unit/fisher`` checks two seeds).
        """
        arr = theta_array(theta, self.n_params, owner=self.name)
        check_theta_bounds(arr, self.theta_bounds, owner=self.name, theta=theta)
        try:
            x = self.draw(arr, 1, 8, child_rng(rng))
        except Exception as err:  # noqa: BLE001 - numpy refuses invalid parameters when drawing
            raise ValueError(
                f"theta={theta!r} is outside the support of {self.name}: drawing records failed "
                f"({type(err).__name__}: {str(err).splitlines()[0]}). Pass a parameter value "
                "inside the population's parameter space."
            ) from None
        _, lp = self.score(arr, x)
        if not np.all(np.isfinite(lp)):
            raise ValueError(
                f"theta={theta!r} is outside the support of {self.name}: the records' log density "
                "is not finite there. Pass a parameter value inside the population's parameter "
                "space."
            )
        return arr

    def __repr__(self):
        return self.name


class QuadratureMoments:
    r"""`\mu_s, \Sigma_s` and their θ-derivatives by quadrature over one record.

    ```text
    \partial_{\theta_k}\mu_s = \int s(x)\, \partial_{\theta_k}\log p(x\mid\theta)\, p(x\mid\theta)\,dx,
    \qquad
    \partial_{\theta_k}\Sigma_s = \int s s^T \partial_{\theta_k}\log p\; p\,dx
    - \partial_{\theta_k}\mu_s\,\mu_s^T - \mu_s\,\partial_{\theta_k}\mu_s^T ,
    ```

    the score from the population's PyMC log density by autodiff (``scipy.integrate.quad_vec``).
    Needs a continuous scalar record whose support does not depend on θ (not ``Unif(-θ, θ)``: use
    `uniform_width_example`); a discrete or multivariate population is refused at construction
    (for discrete records use `fisher_information` with ``population=`` and ``statistic=``,
    seed 001 Algorithm 2, or closed-form `Moments`).

    Parameters
    ----------
    population : Population
    s : callable
        NumPy function of a 1-d array of records returning ``(K,)`` or ``(K, d_s)``.
    lower, upper : float
        Integration limits (default the real line).
    """

    def __init__(self, population, s, *, lower=-np.inf, upper=np.inf, name=None):
        if not isinstance(population, Population):
            raise TypeError(f"population must be a pymc_dp.fisher.Population, got {population!r}.")
        dtype, ndim_supp = population.record_type()
        rule = "QuadratureMoments integrates s(x) p(x | theta) dx over a continuous scalar record"
        if not dtype.startswith("float"):
            raise ValueError(
                f"{rule}, but population={population.name} has discrete records (dtype {dtype}). "
                "For discrete records use fisher_information(theta, n=..., population=population, "
                "statistic=..., mechanism=...) (method='marginal_mc', seed 001 Algorithm 2: the "
                "exact marginal from the population's own draws and score, no quadrature), or "
                "give the moments of s(X) in closed form with Moments(mean, cov) (e.g. "
                "bernoulli_example())."
            )
        if ndim_supp != 0:
            raise ValueError(
                f"{rule}, but population={population.name} has {ndim_supp}-dimensional records. "
                "Give the moments of s(X) in closed form with Moments(mean, cov)."
            )
        self.population, self.s = population, s
        self.lower, self.upper = float(lower), float(upper)
        self.n_params = population.n_params
        self.theta_bounds = population.theta_bounds
        self.name = name or f"QuadratureMoments({population.name})"

    @property
    def d(self) -> int:
        return self.population.d

    def evaluate(self, theta):
        arr = self.population.check_theta(theta)
        pop = self.population

        def integrand(x):
            sc, lp = pop.score(arr, np.array([[x]]))
            p = math.exp(lp[0])
            sv = np.atleast_1d(np.asarray(self.s(np.array([x])), float)).ravel()
            ss = np.outer(sv, sv).ravel()
            base = np.concatenate([[1.0], sv, ss])
            return p * np.concatenate([base, np.outer(base, sc[0]).ravel()])

        out, _ = integrate.quad_vec(integrand, self.lower, self.upper, epsabs=1e-11, epsrel=1e-10)
        ds = np.atleast_1d(np.asarray(self.s(np.array([0.0])), float)).ravel().shape[0]
        d = self.d
        nb = 1 + ds + ds * ds
        base, grads = out[:nb], out[nb:].reshape(nb, d)
        mass = base[0]
        mu = base[1 : 1 + ds] / mass
        ss = base[1 + ds :].reshape(ds, ds) / mass
        cov = ss - np.outer(mu, mu)
        dmu = grads[1 : 1 + ds]  # (ds, d)
        dss = grads[1 + ds :].reshape(ds, ds, d)
        dcov = dss - np.einsum("ik,j->ijk", dmu, mu) - np.einsum("i,jk->ijk", mu, dmu)
        _check_finite_psd(mu, cov, dmu, dcov, owner=self.name, theta=theta)
        return mu, cov, dmu, dcov

    def __repr__(self):
        return self.name


# -- seed 001 Examples 1-4: the formulas live in pymc_dp.distributions.clt ----------------------
@functools.lru_cache(maxsize=64)
def normal_mean_example(a: int) -> Moments:
    r"""Seed 001 Example 1: `X \sim \mathcal N(\theta, 1)`, `s(x) = x^a` (integer a ≥ 1);
    moments from `pymc_dp.distributions.clt.normal_mean_moments`."""
    normal_mean_moments(0.0, a)  # checks a
    return Moments.from_pair(lambda t: normal_mean_moments(t, a), name=f"N(theta, 1), s(x)=x^{a}")


@functools.lru_cache(maxsize=64)
def normal_variance_example(a: float) -> Moments:
    r"""Seed 001 Example 2: `X \sim \mathcal N(0, \theta)`, `s(x) = |x|^a`, a > 0;
    moments from `pymc_dp.distributions.clt.normal_variance_moments`."""
    a = check_moment_power(a)
    return Moments.from_pair(
        lambda t: normal_variance_moments(t, a),
        theta_bounds=(0.0, None),
        name=f"N(0, theta), s(x)=|x|^{a:g}",
    )


@functools.lru_cache(maxsize=64)
def uniform_width_example(a: float) -> Moments:
    r"""Seed 001 Example 3: `X \sim \mathrm{Unif}(-\theta, \theta)`, `s(x) = |x|^a`;
    moments from `pymc_dp.distributions.clt.uniform_width_moments`."""
    a = check_moment_power(a)
    return Moments.from_pair(
        lambda t: uniform_width_moments(t, a),
        theta_bounds=(0.0, None),
        name=f"Unif(-theta, theta), s(x)=|x|^{a:g}",
    )


@functools.lru_cache(maxsize=64)
def bernoulli_example() -> Moments:
    r"""Seed 001 Example 4: `X \sim \mathrm{Bern}(\theta)`, `s(x) = x`:
    `\mu_s = \theta`, `\Sigma_s = \theta(1-\theta)`."""
    return Moments.from_pair(bernoulli_moments, theta_bounds=(0.0, 1.0), name="Bern(theta)")
