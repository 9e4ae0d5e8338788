"""Random model variants for the conditionals-vs-logp tests (Geweke-style, STYLE 15).

Each builder takes a ``np.random.Generator`` and returns a :class:`Variant`: a PyMC model written
the way users write them — parameters as Python ints / floats, NumPy scalars and arrays of every
width (int8 … int64, float32, float64), ``pm.Data``, broadcasting, ``dims``, transformed θ
(positive, unit interval, simplex), vector θ, several parents and several releases — plus the names
of the variables the step under test draws. :func:`points` gives random states in PyMC's value
space: joint prior draws of every free variable, transformed by PyMC itself.
"""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt

import pymc_dp as pdp

INT_STYLES = ("int", "int8", "int16", "int32", "int64", "data")
FLOAT_STYLES = ("float", "float32", "float64", "data")
_counter = itertools.count()


@dataclasses.dataclass
class Variant:
    """A model, the names of the variables the step draws, and how it was written (for messages)."""

    model: pm.Model
    vars: list
    label: str


def styled(rng, value, *, integral=None, shape=None, label=None, data=True):
    """``value`` written in a random style (int / float / NumPy dtype / ``pm.Data``).

    Integral values (``integral=True``) may come as any integer width that holds them and as
    floats; others as floats of any width. Call inside a model context (``pm.Data``).
    ``shape``: broadcast to this shape first (an array parameter). ``label`` collects the style.
    ``data=False``: never ``pm.Data`` (whose static shape is unknown, where a step needs it).
    """
    value = np.broadcast_to(np.asarray(value, dtype=float), shape) if shape is not None else value
    whole = np.all(np.asarray(value) == np.round(value)) if integral is None else integral
    styles = list(FLOAT_STYLES)
    if whole:
        top = float(np.max(np.abs(value)))
        styles += [
            s
            for s in INT_STYLES
            if not (s == "int8" and top > 127) and not (s == "int16" and top > 32767)
        ]
    styles = styles if data else [s for s in styles if s != "data"]
    style = styles[rng.integers(len(styles))]
    if label is not None:
        label.append(style)
    arr = np.asarray(value)
    if style == "int":
        return int(arr) if arr.ndim == 0 else arr.astype(int).tolist()
    if style == "float":
        return float(arr) if arr.ndim == 0 else arr.astype(float).tolist()
    if style == "data":
        return pm.Data(f"d{next(_counter)}", arr.astype(int) if whole else arr.astype(float))
    return arr.astype(style)


def points(model, rng, k):
    """``k`` random states in PyMC's value space: joint prior draws of the free variables, mapped
    to value space by PyMC's transforms (one compiled function, as PyMC's initial point does)."""
    rvs = list(model.free_RVs)
    draws = pm.draw(rvs, draws=k, random_seed=rng)
    draws = list(draws) if isinstance(draws, list | tuple) else [draws]
    draws = [np.asarray(a)[None] for a in draws] if k == 1 else draws  # draws=1 drops the axis
    outs = []
    for rv in rvs:
        tr = model.rvs_to_transforms.get(rv)
        outs.append(rv if tr is None else tr.forward(rv, *rv.owner.inputs))
    fn = pytensor.function(rvs, outs, on_unused_input="ignore")
    names = [model.rvs_to_values[rv].name for rv in rvs]
    return [dict(zip(names, (np.asarray(o) for o in fn(*[d[j] for d in draws])))) for j in range(k)]


def _choice(rng, options):
    return options[rng.integers(len(options))]


def _sd(rng, label):
    """A prior or record scale: the int8-overflow values (16, 20, 100, 12) or a non-dyadic float."""
    return styled(rng, _choice(rng, [16, 100, 20, 12, 3, 0.7, 2.5]), label=label)


def _release(name, x, rng, shape=()):
    """A clamped-sum release of ``x`` with Laplace or Gaussian noise (any observed value is valid)."""
    mech = (
        pdp.Laplace(scale=float(rng.uniform(0.5, 3)))
        if rng.random() < 0.5
        else pdp.Gaussian(sigma=float(rng.uniform(0.5, 3)))
    )
    obs = rng.normal(0, 3, size=shape)
    return pdp.DPObserved(
        name, x, statistic=pdp.Sum(lower=-50, upper=50), mechanism=mech, observed=obs
    )


# ---------------------------------------------------------------------------------- ConjugateTheta
def conjugate_variant(rng, kind=None) -> Variant:
    kind = kind or _choice(
        rng, ["normal", "normal", "linear", "beta", "gamma", "inverse_gamma", "dirichlet"]
    )
    lab = [kind]
    n = int(rng.integers(3, 9))
    d = int(rng.integers(2, 4))
    vector = rng.random() < 0.4
    coords = {"g": [f"g{i}" for i in range(d)], "obs": np.arange(n)}
    with pm.Model(coords=coords) as model:
        if kind == "normal":
            m0 = (
                pm.Normal("m0", 0, 1)
                if rng.random() < 0.3
                else styled(rng, _choice(rng, [0, 5, -3, 1.5]), label=lab)
            )
            if vector:
                s0 = (
                    styled(rng, _choice(rng, [16, 100, 20, 0.7]), shape=(d,), label=lab)
                    if rng.random() < 0.5
                    else _sd(rng, lab)
                )
                theta = pm.Normal("theta", m0, s0, dims="g")
                shape = (n, d)
            else:
                theta = pm.Normal("theta", m0, _sd(rng, lab))
                shape = (n,)
            sigma = pm.HalfNormal("sigma", 2) if rng.random() < 0.3 else _sd(rng, lab)
            x = pm.Normal("x", theta, sigma, shape=shape)
            _release("s", x, rng, shape[1:])
            if rng.random() < 0.5:  # a second record variable with its own release
                y = pm.Normal("y", theta, _sd(rng, lab), shape=shape)
                _release("t", y, rng, shape[1:])
        elif kind == "linear":
            X = styled(rng, rng.integers(-3, 4, size=(n, d)), integral=True, label=lab)
            beta = pm.Normal(
                "theta", styled(rng, _choice(rng, [0, 2]), label=lab), _sd(rng, lab), dims="g"
            )
            a = styled(rng, _choice(rng, [1, 0.5, 40]), label=lab)
            x = pm.Normal("x", a + pt.as_tensor_variable(X) @ beta, _sd(rng, lab), shape=(n,))
            _release("s", x, rng)
        elif kind == "beta":
            a = styled(rng, float(rng.integers(1, 6)), label=lab)
            b = styled(rng, float(rng.integers(1, 6)), label=lab)
            theta = (
                pm.Beta("theta", a, b, shape=(d,), dims="g") if vector else pm.Beta("theta", a, b)
            )
            shape = (n, d) if vector else (n,)
            if rng.random() < 0.5:
                x = pm.Bernoulli("x", theta, shape=shape)
                up = 1
            else:
                up = int(_choice(rng, [3, 100]))
                x = pm.Binomial("x", styled(rng, up, label=lab), theta, shape=shape)
            pdp.DPObserved(
                "s",
                x,
                statistic=pdp.Sum(lower=0, upper=up),
                mechanism=pdp.Laplace(scale=1.5),
                observed=rng.uniform(0, n * up, size=shape[1:]),
            )
        elif kind == "gamma":
            alpha = styled(rng, float(_choice(rng, [2, 3, 100])), label=lab)
            rate = styled(rng, _choice(rng, [1, 2, 100, 0.7]), label=lab)
            theta = (
                pm.Gamma("theta", alpha, rate, shape=(d,), dims="g")
                if vector
                else pm.Gamma("theta", alpha, rate)
            )
            shape = (n, d) if vector else (n,)
            child = _choice(rng, ["poisson", "exponential", "normal"])
            lab.append(child)
            if child == "poisson":
                x = pm.Poisson("x", theta, shape=shape)
                pdp.DPObserved(
                    "s",
                    x,
                    statistic=pdp.Sum(lower=0, upper=10),
                    mechanism=pdp.Laplace(scale=1.0),
                    observed=rng.uniform(0, 10, size=shape[1:]),
                )
            elif child == "exponential":
                x = pm.Exponential("x", theta, shape=shape)
                _release("s", x, rng, shape[1:])
            else:
                mu = (
                    pm.Normal("mu", 0, 1)
                    if rng.random() < 0.5
                    else styled(rng, _choice(rng, [0, 3]), label=lab)
                )
                x = pm.Normal("x", mu, tau=theta, shape=shape)
                _release("s", x, rng, shape[1:])
        elif kind == "inverse_gamma":
            theta = pm.InverseGamma(
                "theta",
                styled(rng, float(_choice(rng, [2, 3, 100])), label=lab),
                styled(rng, _choice(rng, [1, 2, 100, 0.7]), label=lab),
            )
            mu = (
                pm.Normal("mu", 0, 1)
                if rng.random() < 0.5
                else styled(rng, _choice(rng, [0, 3]), label=lab)
            )
            x = pm.Normal("x", mu, pt.sqrt(theta), shape=(n,))
            _release("s", x, rng)
        else:  # dirichlet
            k = d + 1
            a = styled(rng, rng.integers(1, 5, size=k).astype(float), integral=True, label=lab)
            theta = pm.Dirichlet("theta", a)
            x = pm.Categorical("x", theta, shape=(n,))
            pdp.DPObserved(
                "s",
                x,
                statistic=pdp.Counts(k),
                mechanism=pdp.Laplace(scale=1.0),
                observed=rng.uniform(0, n, size=k),
            )
    return Variant(model, ["theta"], " ".join(map(str, lab)))


def int8_normal(sd) -> Variant:
    """Issue 17's model: ``pm.Normal("mu", 0, sd)`` with Python ints (int8 constants), N(mu, 1) records."""
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, sd)
        x = pm.Normal("x", mu, 1, shape=20)
        pdp.DPObserved(
            "s",
            x,
            statistic=pdp.Sum(lower=-10, upper=10),
            mechanism=pdp.Gaussian(sigma=2.0),
            observed=25.0,
        )
    return Variant(model, ["mu"], f"Normal(0, {sd})")


# ------------------------------------------------------------------------------ SufficientTheta
def sufficient_variant(rng, kind=None) -> Variant:
    kind = kind or _choice(
        rng,
        [
            "normal",
            "gamma_mean",
            "lognormal",
            "exponential",
            "beta",
            "poisson",
            "bernoulli",
            "binomial",
            "geometric",
            "categorical",
            "halfnormal",
        ],
    )
    lab = [kind]
    n = int(rng.integers(3, 9))
    with pm.Model(coords={"k": ["a", "b", "c"]}) as model:
        if kind == "normal":
            sigma = pm.HalfNormal("sigma", _sd(rng, lab))
            joint = rng.random() < 0.5
            mu = (
                pm.Normal("mu", styled(rng, _choice(rng, [0, 2]), label=lab), _sd(rng, lab))
                if joint
                else styled(rng, _choice(rng, [0, -3, 1.5]), label=lab)
            )
            x = pm.Normal("x", mu, sigma, shape=n)
            names = ["mu", "sigma"] if joint else ["sigma"]
            _release("s", x, rng)
        elif kind == "gamma_mean":
            m = pm.Gamma(
                "m", styled(rng, 2, label=lab), styled(rng, _choice(rng, [1, 0.5]), label=lab)
            )
            a = styled(rng, _choice(rng, [2, 3]), label=lab)
            x = pm.Gamma("x", a, a / m, shape=n)
            names = ["m"]
            pdp.DPObserved(
                "s",
                x,
                statistic=pdp.Sum(lower=0, upper=10),
                mechanism=pdp.Laplace(scale=1.0),
                observed=float(rng.uniform(0, 3 * n)),
            )
        elif kind == "lognormal":
            mu = pm.Normal("mu", 0, _sd(rng, lab))
            sigma = pm.HalfNormal("sigma", _sd(rng, lab))
            x = pm.LogNormal("x", mu, sigma, shape=n)
            names = ["mu", "sigma"]
            pdp.DPObserved(
                "s",
                x,
                statistic=pdp.Sum(lower=0, upper=10),
                mechanism=pdp.Gaussian(sigma=2.0),
                observed=float(rng.uniform(0, 3 * n)),
            )
        elif kind == "exponential":
            lam = pm.HalfNormal("lam", _sd(rng, lab))
            x = pm.Exponential("x", lam, shape=n)
            names = ["lam"]
            pdp.DPObserved(
                "s",
                x,
                statistic=pdp.Sum(lower=0, upper=5),
                mechanism=pdp.Laplace(scale=1.0),
                observed=float(rng.uniform(0, n)),
            )
        elif kind == "halfnormal":
            s = pm.Gamma(
                "sd", styled(rng, 2, label=lab), styled(rng, _choice(rng, [1, 100]), label=lab)
            )
            x = pm.HalfNormal("x", s, shape=n)
            names = ["sd"]
            _release("s", x, rng)
        elif kind == "beta":
            a = pm.Gamma("a", styled(rng, 2, label=lab), 1)
            b = pm.Gamma("b", 2, styled(rng, _choice(rng, [1, 2]), label=lab))
            x = pm.Beta("x", a, b, shape=n)
            names = ["a", "b"]
            pdp.DPObserved(
                "s",
                x,
                statistic=pdp.Sum(lower=0, upper=1),
                mechanism=pdp.Laplace(scale=0.5),
                observed=float(rng.uniform(0, n)),
            )
        elif kind == "poisson":
            mu = pm.LogNormal(
                "mu", styled(rng, _choice(rng, [0, 1]), label=lab), styled(rng, 1, label=lab)
            )
            x = pm.Poisson("x", mu, shape=n)
            names = ["mu"]
            pdp.DPObserved(
                "s",
                x,
                statistic=pdp.Sum(lower=0, upper=6),
                mechanism=pdp.Laplace(scale=1.0),
                observed=float(rng.uniform(0, 2 * n)),
            )
        elif kind in ("bernoulli", "binomial", "geometric"):
            p = (
                pm.Uniform("p", 0, 1)
                if rng.random() < 0.5
                else pm.Beta("p", styled(rng, 2, label=lab), styled(rng, 3, label=lab))
            )
            if kind == "bernoulli":
                x, up = pm.Bernoulli("x", p, shape=n), 1
            elif kind == "binomial":
                up = int(_choice(rng, [3, 100]))
                x = pm.Binomial("x", styled(rng, up, label=lab), p, shape=n)
            else:
                x, up = pm.Geometric("x", p, shape=n), 5
            names = ["p"]
            pdp.DPObserved(
                "s",
                x,
                statistic=pdp.Sum(lower=0, upper=up),
                mechanism=pdp.Laplace(scale=1.0),
                observed=float(rng.uniform(0, n * up)),
            )
        else:  # categorical with p = softmax(w), w a vector without transform
            w = pm.Normal("w", 0, _sd(rng, lab), dims="k")
            x = pm.Categorical("x", pt.special.softmax(w), shape=n)
            names = ["w"]
            pdp.DPObserved(
                "s",
                x,
                statistic=pdp.Counts(3),
                mechanism=pdp.Laplace(scale=1.0),
                observed=rng.uniform(0, n, size=3),
            )
    return Variant(model, names, " ".join(map(str, lab)))


# ----------------------------------------------------------------------------------- Interweave
def interweave_variant(rng, kind=None) -> Variant:
    kind = kind or _choice(
        rng, ["normal", "normal", "studentt", "laplace", "halfnormal", "exponential"]
    )
    lab = [kind]
    n = int(rng.integers(3, 9))
    d = 2
    vector = kind == "normal" and rng.random() < 0.4
    with pm.Model(coords={"g": ["a", "b"]}) as model:
        names = []
        if kind in ("normal", "studentt", "laplace"):
            m0 = styled(rng, _choice(rng, [0, 5, 1.5]), label=lab)
            mu = (
                pm.Normal("mu", m0, _sd(rng, lab), dims="g")
                if vector
                else pm.Normal("mu", m0, _sd(rng, lab))
            )
            shape = (n, d) if vector else (n,)
            free_sigma = rng.random() < 0.6
            sigma = pm.HalfNormal("sigma", _sd(rng, lab)) if free_sigma else _sd(rng, lab)
            names = ["mu", "sigma"] if free_sigma and rng.random() < 0.5 else ["mu"]
            loc = (
                mu + styled(rng, _choice(rng, [0, 2, 0.5]), label=lab) if rng.random() < 0.4 else mu
            )
            if kind == "normal":
                x = pm.Normal("x", loc, sigma, shape=shape)
            elif kind == "studentt":
                x = pm.StudentT(
                    "x",
                    nu=styled(rng, _choice(rng, [3, 5]), label=lab),
                    mu=loc,
                    sigma=sigma,
                    shape=shape,
                )
            else:
                x = pm.Laplace("x", loc, sigma, shape=shape)
            _release("s", x, rng, shape[1:])
            if rng.random() < 0.4:  # a second release of the same records
                pdp.DPObserved(
                    "s2",
                    x,
                    statistic=pdp.Mean(lower=-20, upper=20),
                    mechanism=pdp.Laplace(scale=0.5),
                    observed=rng.normal(0, 2, size=shape[1:]),
                )
            if rng.random() < 0.4:  # a second record variable with its own release
                y = pm.Normal("y", mu, styled(rng, _choice(rng, [1, 16]), label=lab), shape=shape)
                _release("t", y, rng, shape[1:])
        elif kind == "halfnormal":
            s = pm.Gamma(
                "sd", styled(rng, 2, label=lab), styled(rng, _choice(rng, [1, 0.5]), label=lab)
            )
            x = pm.HalfNormal("x", s, shape=n)
            names = ["sd"]
            pdp.DPObserved(
                "s",
                x,
                statistic=pdp.Sum(lower=0, upper=8),
                mechanism=pdp.Laplace(scale=1.0),
                observed=float(rng.uniform(0, 2 * n)),
            )
        else:
            lam = pm.Gamma(
                "lam", styled(rng, 2, label=lab), styled(rng, _choice(rng, [1, 2]), label=lab)
            )
            x = pm.Exponential("x", lam, shape=n)
            names = ["lam"]
            pdp.DPObserved(
                "s",
                x,
                statistic=pdp.Sum(lower=0, upper=5),
                mechanism=pdp.Gaussian(sigma=1.0),
                observed=float(rng.uniform(0, n)),
            )
    return Variant(model, names, " ".join(map(str, lab)))


# ------------------------------------------------------------------------------------ Collapsed
def collapsed_variant(rng, kind=None) -> Variant:
    kind = kind or _choice(
        rng,
        [
            "bernoulli",
            "binomial",
            "poisson_tail",
            "poisson_closed",
            "poisson_local",
            "poisson_const",
            "geometric",
            "negbin_tail",
            "negbin_closed",
            "negbin_local",
            "per_record_local",
            "categorical_counts",
            "categorical_local",
        ],
    )
    lab = [kind]
    n = int(rng.integers(3, 7))
    with pm.Model() as model:
        names = ["x"]
        if kind in ("bernoulli", "binomial"):
            p = pm.Beta(
                "p", styled(rng, 2, label=lab), styled(rng, _choice(rng, [1, 3]), label=lab)
            )
            names.append("p")
            if kind == "bernoulli":
                x, up = pm.Bernoulli("x", p, shape=n), 1
            else:
                up = int(_choice(rng, [3, 4]))
                x = pm.Binomial("x", styled(rng, up, label=lab), p, shape=n)
            how = _choice(rng, ["sum", "local", "two"])
            lab.append(how)
            if how == "local":
                pdp.DPObserved(
                    "r",
                    x,
                    statistic=pdp.Local(lower=0, upper=up),
                    mechanism=pdp.Laplace(scale=1.0),
                    observed=rng.uniform(0, up, size=n),
                )
            else:
                pdp.DPObserved(
                    "s",
                    x,
                    statistic=pdp.Sum(lower=0, upper=up),
                    mechanism=pdp.Laplace(scale=1.5),
                    observed=float(rng.uniform(0, n * up)),
                )
                if how == "two":  # two releases of the same sum
                    pdp.DPObserved(
                        "s2",
                        x,
                        statistic=pdp.Sum(lower=0, upper=up),
                        mechanism=pdp.DiscreteLaplace(scale=2.0),
                        observed=int(rng.integers(0, n * up)),
                    )
        elif kind.startswith("poisson"):
            if kind == "poisson_const":  # no θ: an int8 rate, n·μ overflowed int8
                x = pm.Poisson("x", styled(rng, _choice(rng, [100, 60]), label=lab), shape=n)
                pdp.DPObserved(
                    "s",
                    x,
                    statistic=pdp.Sum(),
                    mechanism=pdp.DiscreteLaplace(scale=3.0),
                    observed=int(rng.integers(50, 100) * n),
                )
            else:
                lam = pm.Gamma(
                    "lam",
                    styled(rng, _choice(rng, [2, 3]), label=lab),
                    styled(rng, _choice(rng, [1, 2]), label=lab),
                )
                names.append("lam")
                x = pm.Poisson("x", lam, shape=n)
                if kind == "poisson_tail":
                    pdp.DPObserved(
                        "s",
                        x,
                        statistic=pdp.Sum(lower=0, upper=3),
                        mechanism=pdp.DiscreteLaplace(scale=1.0),
                        observed=int(rng.integers(0, 3 * n)),
                    )
                elif kind == "poisson_closed":
                    pdp.DPObserved(
                        "s",
                        x,
                        statistic=pdp.Sum(),
                        mechanism=pdp.DiscreteLaplace(scale=2.0),
                        observed=int(rng.integers(0, 3 * n)),
                    )
                else:
                    pdp.DPObserved(
                        "a",
                        x,
                        statistic=pdp.Local(),
                        mechanism=pdp.Laplace(scale=1.0),
                        observed=rng.uniform(0, 4, size=n),
                    )
                    pdp.DPObserved(
                        "c",
                        x,
                        statistic=pdp.Local(),
                        mechanism=pdp.DiscreteLaplace(scale=1.5),
                        observed=rng.integers(0, 4, size=n),
                    )
        elif kind == "geometric":
            p = pm.Beta("p", styled(rng, 2, label=lab), styled(rng, 2, label=lab))
            names.append("p")
            x = pm.Geometric("x", p, shape=n)
            pdp.DPObserved(
                "s",
                x,
                statistic=pdp.Sum(),
                mechanism=pdp.Laplace(scale=1.5),
                observed=float(rng.uniform(n, 3 * n)),
            )
        elif kind == "per_record_local":
            # records with their own parameters under local releases: a covariate, per-record
            # trials, per-record category probabilities
            cov = styled(rng, rng.normal(0, 1, size=n), label=lab)
            which = _choice(rng, ["poisson", "binomial", "bernoulli", "categorical"])
            lab.append(which)
            if which == "categorical":
                beta = pm.Normal("beta", 0, 1, shape=3)
                names.append("beta")
                logits = pt.as_tensor_variable(cov)[:, None] * beta[None, :]
                x = pm.Categorical("x", pm.math.softmax(logits, axis=-1), shape=n)
                pdp.DPObserved(
                    "r",
                    x,
                    statistic=pdp.Local(),
                    mechanism=pdp.RandomizedResponse(1.0, n_categories=3),
                    observed=rng.integers(0, 3, size=n),
                )
            else:
                a = pm.Normal("a", 0, 1)
                b = pm.Normal("b", 0, 1)
                names += ["a", "b"]
                eta = a + b * pt.as_tensor_variable(cov)
                if which == "poisson":
                    x, up = pm.Poisson("x", pm.math.exp(eta), shape=n), 5
                elif which == "binomial":
                    trials = rng.integers(1, 5, size=n)
                    x, up = pm.Binomial("x", trials, pm.math.invlogit(eta), shape=n), 4
                else:
                    x, up = pm.Bernoulli("x", pm.math.invlogit(eta), shape=n), 1
                pdp.DPObserved(
                    "r",
                    x,
                    statistic=pdp.Local(lower=0, upper=up),
                    mechanism=pdp.DiscreteLaplace(scale=1.5),
                    observed=rng.integers(0, up + 2, size=n),
                )
        elif kind.startswith("negbin"):
            # overdispersed counts: (mu, alpha) or (n, p) form, the dispersion free or fixed
            mu = pm.Gamma(
                "mu", styled(rng, 2, label=lab), styled(rng, _choice(rng, [0.5, 1]), label=lab)
            )
            names.append("mu")
            if rng.random() < 0.5:
                alpha = pm.HalfNormal("alpha", styled(rng, _choice(rng, [2, 4]), label=lab))
                names.append("alpha")
                lab.append("free alpha")
            else:
                alpha = styled(rng, _choice(rng, [1.5, 3]), label=lab)
            if rng.random() < 0.5:
                x = pm.NegativeBinomial("x", mu=mu, alpha=alpha, shape=n)
            else:
                lab.append("n-p form")
                x = pm.NegativeBinomial("x", n=alpha, p=alpha / (mu + alpha), shape=n)
            if kind == "negbin_tail":
                pdp.DPObserved(
                    "s",
                    x,
                    statistic=pdp.Sum(lower=0, upper=4),
                    mechanism=pdp.DiscreteLaplace(scale=1.0),
                    observed=int(rng.integers(0, 4 * n)),
                )
            elif kind == "negbin_closed":
                pdp.DPObserved(
                    "s",
                    x,
                    statistic=pdp.Sum(),
                    mechanism=_choice(
                        rng, [pdp.DiscreteLaplace(scale=2.0), pdp.Gaussian(sigma=2.0)]
                    ),
                    observed=int(rng.integers(0, 3 * n)),
                )
            else:
                pdp.DPObserved(
                    "r",
                    x,
                    statistic=pdp.Local(lower=0, upper=int(_choice(rng, [5, 8]))),
                    mechanism=pdp.DiscreteLaplace(scale=2.0),
                    observed=rng.integers(0, 6, size=n),
                )
        else:
            k = 3
            pi = pm.Dirichlet(
                "pi",
                styled(
                    rng,
                    rng.integers(1, 4, size=k).astype(float),
                    integral=True,
                    label=lab,
                    data=False,
                ),
            )  # Collapsed needs K static
            names.append("pi")
            x = pm.Categorical("x", pi, shape=n)
            if kind == "categorical_counts":
                pdp.DPObserved(
                    "s",
                    x,
                    statistic=pdp.Counts(k),
                    mechanism=pdp.Laplace(scale=1.0),
                    observed=rng.uniform(0, n, size=k),
                )
            else:
                pdp.DPObserved(
                    "r",
                    x,
                    statistic=pdp.Local(),
                    mechanism=pdp.RandomizedResponse(1.0, n_categories=k),
                    observed=rng.integers(0, k, size=n),
                )
    return Variant(model, names, " ".join(map(str, lab)))


# ---------------------------------------------------------------------- Collapsed, Gaussian plan
def gaussian_variant(rng, kind=None) -> Variant:
    """Normal records under one linear unclamped Gaussian release (the ``"gaussian"`` plan):
    ``pdp.Sum()`` / ``pdp.Mean()`` / ``pdp.Local()``, record means and sds that are expressions of
    θ broadcast per record (a covariate array, a scale parameter), vector records with a vector θ,
    ``dims``, and parameters in every style (Python int/float, NumPy widths, ``pm.Data``)."""
    kind = kind or _choice(rng, ["sum", "mean", "local"])
    lab = [kind]
    n = int(rng.integers(3, 7))
    vector = bool(rng.random() < 0.3)
    use_dims = bool(rng.random() < 0.4)
    coords = {"person": np.arange(n)} if use_dims else {}
    if vector:
        coords["k"] = ["a", "b"]
        lab.append("vector")
    with pm.Model(coords=coords) as model:
        names = ["x"]
        if vector:
            mu0 = pm.Normal(
                "mu0", styled(rng, [0.0, 1.0], shape=(2,), label=lab), _sd(rng, lab), dims="k"
            )
        else:
            mu0 = pm.Normal("mu0", styled(rng, _choice(rng, [0, 1, 0.5]), label=lab), _sd(rng, lab))
        names.append("mu0")
        mean = mu0
        if rng.random() < 0.5:  # a covariate per record: mu_i = mu0 + beta c_i
            beta = pm.Normal("beta", 0, styled(rng, _choice(rng, [1, 2.5]), label=lab))
            names.append("beta")
            cov = styled(rng, rng.normal(0, 1, size=n), label=lab)
            cov = pt.as_tensor_variable(cov)
            mean = mean + beta * (cov[:, None] if vector else cov)
            lab.append("covariate")
        if rng.random() < 0.5:
            sigma = pm.HalfNormal("sigma", styled(rng, _choice(rng, [1, 2]), label=lab))
            names.append("sigma")
            lab.append("sigma θ")
        else:
            sigma = styled(rng, _choice(rng, [1, 0.7, 3]), label=lab)
        shape = (n, 2) if vector else (n,)
        if use_dims:
            x = pm.Normal("x", mean, sigma, dims=("person", "k") if vector else "person")
            lab.append("dims")
        else:
            x = pm.Normal("x", mean, sigma, shape=shape)
        stat = {"sum": pdp.Sum(), "mean": pdp.Mean(), "local": pdp.Local()}[kind]
        release_shape = shape if kind == "local" else shape[1:]
        obs = rng.normal(0, 3, size=release_shape)
        if rng.random() < 0.3:
            obs = pm.Data("obs", obs)
            lab.append("data release")
        pdp.DPObserved(
            "s",
            x,
            statistic=stat,
            mechanism=pdp.Gaussian(sigma=float(_choice(rng, [0.5, 2.0, 1.3]))),
            observed=obs,
        )
    return Variant(model, names, " ".join(map(str, lab)))


# --------------------------------------------------------------------- DirichletCells, GammaCells
def _cells_releases(c, shape, rng):
    """One or two ``pdp.Cells`` releases of the table ``c``: discrete Gaussian or Laplace noise of a
    random scale, random counts observed."""
    for m in range(int(rng.integers(1, 3))):
        mech = (
            pdp.DiscreteGaussian(sigma=float(rng.uniform(0.5, 3)))
            if rng.random() < 0.5
            else pdp.Laplace(scale=float(rng.uniform(0.5, 3)))
        )
        obs = rng.integers(0, 15, size=shape)
        pdp.DPObserved(f"s{m}", c, statistic=pdp.Cells(), mechanism=mech, observed=obs)


def _table_coords(shape):
    """Coords for a table of ``shape``: areas (if 2-d) and cells."""
    names = ("area", "cell")[2 - len(shape) :]
    return {name: [f"{name}{i}" for i in range(n)] for name, n in zip(names, shape)}


def _table_where(rng, shape, lab):
    """``shape=`` or the same lengths as ``dims=`` of `_table_coords` (lengths the graph leaves
    open, which the steps read as ``pm.sample()`` does: `graph.fixed_shape`)."""
    if rng.random() < 0.5:
        return {"shape": shape}
    lab.append("dims")
    return {"dims": tuple(_table_coords(shape))}


def dirichlet_cells_variant(rng, kind=None) -> Variant:
    """``π ~ Dirichlet(a)`` (a fixed: ints of any width, floats, ``pm.Data``; one row broadcast to
    the areas or written out per area), ``c ~ Multinomial(n, π)`` (n a scalar or one per area),
    π and c with ``shape=`` or ``dims=``, one or two ``pdp.Cells`` releases of c."""
    lab = ["dirichlet_cells"]
    k = int(rng.integers(2, 6))
    g = _choice(rng, [None, 1, 3])
    shape = (k,) if g is None else (g, k)
    with pm.Model(coords=_table_coords(shape)) as model:
        row = (
            rng.integers(1, 120, size=k).astype(float)
            if rng.random() < 0.5
            else rng.uniform(0.2, 3.0, size=k)
        )
        full = g is not None and rng.random() < 0.5  # the row written out for every area
        a = styled(rng, row, shape=shape if full else None, label=lab)
        where = _table_where(rng, shape, lab)
        pi = pm.Dirichlet("pi", a, **where)
        n_val = rng.integers(0, 30, size=g) if g is not None and rng.random() < 0.5 else 12
        # n as integers only (PyMC's Multinomial draw refuses a float n)
        n_style = _choice(rng, ["int", "int8", "int16", "int64", "data"])
        lab.append(n_style)
        n_arr = np.asarray(n_val)
        n = (
            (int(n_arr) if n_arr.ndim == 0 else n_arr.astype(int).tolist())
            if n_style == "int"
            else pm.Data(f"d{next(_counter)}", n_arr.astype(int))
            if n_style == "data"
            else n_arr.astype(n_style)
        )
        c = pm.Multinomial("c", n=n, p=pi, **where)
        _cells_releases(c, shape, rng)
    return Variant(model, ["pi", "c"], " ".join(map(str, lab)))


# ------------------------------------------------------------------------------------ GammaCells
def gamma_cells_variant(rng, kind=None) -> Variant:
    """``λ ~ Gamma(α, β)`` (α, β fixed: ints of any width incl. int8 overflow values, floats,
    ``pm.Data``; shared or per cell), ``c ~ Poisson(λ)`` of λ's shape (``shape=`` or ``dims=``),
    one or two ``pdp.Cells`` releases of c."""
    lab = ["gamma_cells"]
    k = int(rng.integers(2, 6))
    shape = (k,) if rng.random() < 0.5 else (2, k)
    with pm.Model(coords=_table_coords(shape)) as model:
        per_cell = rng.random() < 0.5
        a_val = rng.uniform(0.2, 4.0, size=shape) if per_cell else _choice(rng, [0.5, 2, 3, 0.7])
        b_val = _choice(rng, [100, 16, 20, 0.125, 2.5, 1])
        alpha = styled(rng, a_val, label=lab)
        beta = styled(rng, b_val, label=lab)
        where = _table_where(rng, shape, lab)
        lam = pm.Gamma("lam", alpha, beta, **where)
        c = pm.Poisson("c", lam, **where)
        _cells_releases(c, shape, rng)
    return Variant(model, ["lam", "c"], " ".join(map(str, lab)))
