r"""Step-size adaptation: the one Robbins–Monro rule every adapted proposal scale uses.

During warm-up only, a log proposal scale `\ell` moves towards the scale whose acceptance
probability is the target `a^*` (Andrieu & Thoms 2008, *Stat. Comput.* 18, §3; Robbins & Monro
1951):

```text
\ell_n = \ell_{n-1} + s\,(a_n - a^*)\, n^{-0.6}, \qquad n = 1, 2, \dots
```

with `a_n` the n-th acceptance probability (or 0/1 accept flag) and `s = +1` when acceptance falls
as the scale grows (a random-walk step), `s = -1` when it rises (a concentration such as the
Wishart proposal's degrees of freedom in `pymc_dp.regression.normal_x`). The gains `n^{-0.6}` sum
to infinity and their squares do not, so `\ell_n` converges to the root; adaptation stops after
warm-up, so the chain that is kept is exact.

Users: the θ random walk of PMMH and MHAAR (`pymc_dp.samplers.random_walk`), the random-walk
move of `Collapsed` (`pymc_dp.marginal.step`) and the σ_y² / Wishart steps of the regression stack
(`pymc_dp.regression.fixed_s`, `pymc_dp.regression.normal_x`). `PenaltyMH` alone tunes with PyMC's
`Metropolis` window rule (``pymc.step_methods.metropolis.tune``), corrected for the privacy
noise, and the slice widths (`Interweave`, `SufficientTheta`, `DirichletHyper`'s α) follow the one
width rule `pymc_dp.samplers.slice.tuned_width`, a running mean of observed widths, not an
acceptance target.
"""

from __future__ import annotations

import numpy as np

__all__ = ["EXPONENT", "robbins_monro"]

EXPONENT = 0.6  # gain n^-0.6: within (1/2, 1], the Robbins–Monro conditions


def robbins_monro(log_scale, accept, target: float, n: int, *, sign: float = 1.0):
    """One Robbins–Monro update of ``log_scale`` towards the acceptance ``target``.

    Parameters
    ----------
    log_scale : float or numpy.ndarray
        The log proposal scale(s) now.
    accept : float, bool or numpy.ndarray
        This iteration's acceptance probability or accept flag(s) (broadcast with ``log_scale``).
    target : float
        The acceptance probability to reach.
    n : int
        The 1-based number of this adaptation step (the gain is ``n ** -0.6``).
    sign : float
        ``+1`` when acceptance decreases with the scale, ``-1`` when it increases.

    Returns
    -------
    float or numpy.ndarray
        The updated log scale(s).
    """
    if n < 1:
        raise ValueError(f"n must be the 1-based adaptation step (n >= 1), got n={n!r}.")
    return log_scale + sign * (np.asarray(accept, dtype=float) - target) / n**EXPONENT
