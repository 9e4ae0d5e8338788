"""The result every regression method returns, and ArviZ conversion that works on ArviZ 0.2x and 1.x."""

from __future__ import annotations

import dataclasses

import numpy as np

from pymc_dp._compat import az_from_dict

__all__ = ["RegressionFit", "to_inference_data"]


def to_inference_data(posterior: dict, sample_stats: dict | None = None, attrs: dict | None = None):
    """``az.from_dict`` for both ArviZ lines (0.2x: keyword groups; 1.x: one nested dict).

    Arrays are ``(chain, draw, ...)``; θ gets the dimension ``coef``.
    """
    groups = {"posterior": posterior}
    if sample_stats:
        groups["sample_stats"] = sample_stats
    return az_from_dict(groups, dims={"theta": ["coef"]}, attrs=attrs)


@dataclasses.dataclass
class RegressionFit:
    """Output of a regression method.

    Attributes
    ----------
    method : str
    theta_hat : ndarray (d,)
        Posterior mean of θ (point estimate for adaSSP).
    draws : dict of ndarray or None
        ``{"theta": (chain, draw, d), "sigma2_y": (chain, draw), ...}``; ``None`` for adaSSP.
    stats : dict
        Sampler statistics (acceptance rates, adapted scales, …) and closed-form quantities.
    seconds : float
        Wall time of the fit.
    """

    method: str
    theta_hat: np.ndarray
    draws: dict | None = None
    stats: dict = dataclasses.field(default_factory=dict)
    seconds: float = float("nan")
    _idata: object = dataclasses.field(default=None, repr=False)

    @property
    def idata(self):
        """ArviZ InferenceData (ArviZ 0.2x) / DataTree (ArviZ 1.x) of the draws; ``None`` for adaSSP."""
        if self._idata is None and self.draws is not None:
            shape = self.draws["theta"].shape[:2]
            ss = {
                k: v
                for k, v in self.stats.items()
                if k.startswith("accept") and isinstance(v, np.ndarray) and v.shape == shape
            }
            self._idata = to_inference_data(self.draws, ss or None, attrs={"method": self.method})
        return self._idata

    @property
    def posterior(self):
        """The posterior group of `idata`."""
        idata = self.idata
        if idata is None:
            raise ValueError(
                f"method={self.method!r} returns a point estimate, not posterior draws."
            )
        return idata.posterior if hasattr(idata, "posterior") else idata["posterior"]

    def theta_draws(self) -> np.ndarray:
        """θ draws flattened over chains, shape (chains·draws, d)."""
        if self.draws is None:
            return self.theta_hat[None, :]
        th = self.draws["theta"]
        return th.reshape(-1, th.shape[-1])

    def interval(self, prob: float = 0.9):
        """Equal-tailed credible interval of each θ coordinate, shape (2, d); NaN for point estimates."""
        if (
            isinstance(prob, bool)
            or not isinstance(prob, int | float | np.integer | np.floating)
            or not 0.0 < prob < 1.0
        ):
            raise ValueError(
                f"prob must be a number strictly between 0 and 1 (the interval's posterior mass), "
                f"got prob={prob!r}. Pass e.g. prob=0.95."
            )
        if self.draws is None:
            return np.full((2, len(self.theta_hat)), np.nan)
        q = 0.5 * (1.0 - prob)
        return np.quantile(self.theta_draws(), [q, 1.0 - q], axis=0)

    def predict(self, X_test) -> np.ndarray:
        """Posterior predictive mean ``E[y | x_test] = x_testᵀ E[θ]`` (seed 000 §7)."""
        X = np.asarray(X_test, dtype=float)
        d = len(self.theta_hat)
        if X.ndim not in (1, 2) or X.shape[-1] != d:
            raise ValueError(
                f"X_test must have {d} columns (one per coefficient of the fit), got "
                f"X_test.shape={X.shape}. Pass the features in the columns the fit was released on."
            )
        return X @ self.theta_hat
