r"""Laplace noise scaled by the β-smooth sensitivity (Nissim, Raskhodnikova and Smith 2007).

```text
s_{dp} = S(x) + \frac{S^*_\beta(x)}{\alpha} Z, \qquad Z \sim \mathrm{Laplace}(0, 1),
\qquad \alpha = \frac{\varepsilon}{2}, \quad \beta = \frac{\varepsilon}{2\ln(2/\delta)},
```

is (ε, δ)-DP (Nissim et al. 2007, Lemma 2.6 / Example 2.7; seed 001 §5.4). The noise scale depends on
the whole database through `S^*_\beta(x)`, so the density of the release is a function of
(statistic, smooth sensitivity), not of the statistic alone:

```text
p(s_{dp} \mid x) = \frac{\alpha}{2 S^*_\beta(x)}
\exp\Big(-\frac{\alpha\, |s_{dp} - S(x)|}{S^*_\beta(x)}\Big).
```

Use it with a statistic that knows its smooth sensitivity (`pymc_dp.Median`,
`pymc_dp.Max`). ``DPObserved`` and ``release`` reach the records through the hooks
`SmoothLaplace.dist_params` and `SmoothLaplace.sample_records`. Record-wise data
augmentation cannot use it (one record changes every record's noise scale); sample with
`pymc_dp.MHAAR` (z-space).

The noise is drawn exactly on the finest lattice ``2^-1074 ℤ`` (every float64 lies on it), never
a lattice chosen from the data-dependent scale: a scale-relative lattice would reveal the binade of
`S^*_\beta(x)`. The integer noise has scale ``scale · 2^1074`` (exact big-integer
arithmetic); the lattice value is rounded to the nearest float64, a post-processing.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from pymc_dp._checks import check_delta, check_epsilon, check_noise_rng
from pymc_dp.mechanisms import _exact
from pymc_dp.mechanisms._noise import laplace_release, reject_bool
from pymc_dp.mechanisms.base import Mechanism

__all__ = ["SmoothLaplace"]


@dataclasses.dataclass(frozen=True, eq=False)
class SmoothLaplace(Mechanism):
    """Laplace noise with scale ``S*_β(x) / α`` (see module docstring).

    Parameters
    ----------
    epsilon : float
        Budget of the release, ε > 0.
    delta : float
        Failure probability, 0 < δ < 1 (seed 001 uses δ = 1/n²).
    """

    epsilon: float
    delta: float

    norm = None  # no global-sensitivity calibration: the scale is data dependent
    kernel_code = None  # no fixed kernel: the scale depends on every record

    def __post_init__(self):
        object.__setattr__(self, "epsilon", check_epsilon(reject_bool(self.epsilon, "epsilon")))
        object.__setattr__(self, "delta", check_delta(reject_bool(self.delta, "delta")))

    @property
    def calibrated(self) -> bool:
        return True

    @property
    def alpha(self) -> float:
        """α = ε/2."""
        return self.epsilon / 2.0

    @property
    def beta(self) -> float:
        """β = ε / (2 ln(2/δ))."""
        return self.epsilon / (2.0 * math.log(2.0 / self.delta))

    def noise_key(self):
        return ("smooth", self.epsilon, self.delta)

    def noise_radius(self, statistic=None):
        """``1000 Λ / α``: the smooth sensitivity is at most the width Λ of the bounds."""
        width = getattr(statistic, "width", None)
        return None if width is None else 1000.0 * width / self.alpha

    def bind(self, statistic, n: int, dim: int) -> SmoothLaplace:
        if not hasattr(statistic, "smooth_sensitivity"):
            raise ValueError(
                f"SmoothLaplace scales its noise by the statistic's smooth sensitivity, but "
                f"statistic={statistic!r} does not provide one. Use pdp.Median(lower, upper) or "
                "pdp.Max(lower, upper), or a global-sensitivity mechanism such as pdp.Laplace."
            )
        return self

    # -- hooks used by DPObserved / release ---------------------------------------------------
    def dist_params(self, statistic, data):
        """``(S(x), S*_β(x)/α)`` as PyTensor graphs of the records (``DPObserved`` hook)."""
        return statistic(*data), statistic.smooth_sensitivity(*data, beta=self.beta) / self.alpha

    def sample_records(self, statistic, data, rng: np.random.Generator):
        """Release from the confidential records themselves (``release`` hook)."""
        value = float(statistic.evaluate(*data))
        values = np.asarray(statistic.contributions_np(*data))
        scale = statistic.smooth_sensitivity_np(values, self.beta) / self.alpha
        return self.sample(value, rng, scale=scale)

    # -- densities ----------------------------------------------------------------------------
    def logpdf(self, release, statistic, scale):
        z = np.asarray(release, dtype=float) - np.asarray(statistic, dtype=float)
        scale = np.asarray(scale, dtype=float)
        return -np.abs(z) / scale - np.log(2.0 * scale)

    def logp(self, value, statistic, scale):
        import pytensor.tensor as pt

        z = pt.cast(value, "float64") - pt.cast(statistic, "float64")
        return -pt.abs(z) / scale - pt.log(2.0 * scale)

    def kernel_params(self):
        raise ValueError(
            "SmoothLaplace has no fixed noise kernel: its scale depends on every record "
            "(smooth sensitivity), so record-wise samplers cannot use it. Sample the records with "
            "pdp.MHAAR([theta]) (z-space, seed 001 Algorithm 7)."
        )

    # -- sampling -----------------------------------------------------------------------------
    #: releases lie on 2^lattice_k ℤ, fixed (independent of the data-dependent scale)
    lattice_k = _exact.MIN_K

    def sample(self, statistic, rng=None, scale=None):
        """Return ``statistic`` plus Laplace noise of ``scale`` on the lattice ``2^-1074 ℤ``.

        ``rng=None`` (default) draws through OpenDP's ``make_laplace``: **only this path is fit
        for a real publication**; a ``Generator`` or int seed drives the same exact sampler.
        """
        rng = check_noise_rng(rng, owner="SmoothLaplace.sample")
        if scale is None:
            raise ValueError(
                "SmoothLaplace.sample needs scale=S*_β(x)/α, which depends on the records. Use "
                "pdp.release(records, statistic=pdp.Median(...), mechanism=SmoothLaplace(...))."
            )
        scale = float(scale)
        if not (math.isfinite(scale) and scale > 0):
            raise ValueError(
                "SmoothLaplace needs a positive, finite noise scale S*_β(x)/α; a zero scale would "
                "release the statistic exactly. The smooth sensitivity of bounded records is "
                "never 0 (pymc_dp floors it at (upper - lower)·2^-1022): compute the scale with "
                "statistic.smooth_sensitivity_np, or release through pdp.release."
            )
        return laplace_release(
            statistic, scale, rng, integer=False, name="SmoothLaplace", k=self.lattice_k
        )

    def random_graph(self, statistic, scale, size=None):
        import pymc as pm

        return pm.Laplace.dist(mu=statistic, b=scale, size=size)

    def dp_event(self):
        from dp_accounting import dp_event

        return dp_event.UnsupportedDpEvent()

    @property
    def epsilon_delta(self) -> tuple[float, float]:
        """``(ε, δ)``: no ``dp_accounting`` event states it; composed by basic composition."""
        return (self.epsilon, self.delta)
