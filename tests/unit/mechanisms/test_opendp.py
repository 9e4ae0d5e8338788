"""pdp.from_opendp: OpenDP measurements read as pymc_dp mechanisms; round trip (slow) exact."""

import re

import numpy as np
import pytest

import pymc_dp as pdp

import opendp.prelude as dp  # a hard dependency: never skipped

dp.enable_features("contrib")


def space(kind, vector, integer):
    atom = dp.atom_domain(T="i64") if integer else dp.atom_domain(T=float, nan=False)
    T = "i64" if integer else float
    if vector:
        metric = dp.l1_distance(T=T) if kind == "laplace" else dp.l2_distance(T=T)
        return dp.vector_domain(atom, size=3), metric
    return atom, dp.absolute_distance(T=T)


@pytest.mark.parametrize("vector", [False, True], ids=["scalar", "vector"])
@pytest.mark.parametrize(
    "kind, integer, cls",
    [
        ("laplace", True, pdp.DiscreteLaplace),
        ("laplace", False, pdp.Laplace),
        ("gaussian", True, pdp.DiscreteGaussian),
        ("gaussian", False, pdp.Gaussian),
    ],
)
def test_measurements_map_to_the_matching_mechanism(kind, integer, cls, vector):
    make = dp.m.make_laplace if kind == "laplace" else dp.m.make_gaussian
    meas = make(*space(kind, vector, integer), scale=1.75)
    mech = pdp.from_opendp(meas)
    assert type(mech) is cls
    scale = mech.noise_scale if kind == "laplace" else mech.noise_sd
    assert scale == 1.75 and mech.sensitivity is None
    # the measurement's output is in the mechanism's support
    value = [3, 4, 5] if vector else 3
    out = np.asarray(
        meas(value if integer else (np.asarray(value, float).tolist() if vector else 3.0))
    )
    assert (out.dtype.kind == "i") == integer


def test_chain_sensitivity_and_privacy_agree_with_opendp():
    """clamp → sum → Laplace: the sensitivity is the transformation's map at 2 symmetric edits
    (one replaced record), so the mechanism's epsilon equals OpenDP's privacy map there."""
    meas = (
        (dp.vector_domain(dp.atom_domain(T=int)), dp.symmetric_distance())
        >> dp.t.then_clamp((0, 1))
        >> dp.t.then_sum()
        >> dp.m.then_laplace(2.0)
    )
    mech = pdp.from_opendp(meas)
    assert type(mech) is pdp.DiscreteLaplace and mech.noise_scale == 2.0
    assert mech.epsilon_spent == pytest.approx(meas.map(2))
    gauss = (
        (dp.vector_domain(dp.atom_domain(T=int)), dp.symmetric_distance())
        >> dp.t.then_clamp((0, 1))
        >> dp.t.then_sum()
        >> dp.m.then_gaussian(3.0)
    )
    g = pdp.from_opendp(gauss)
    assert type(g) is pdp.DiscreteGaussian
    assert g.rho_spent == pytest.approx(gauss.map(2))


def test_explicit_sensitivity_wins_for_a_bare_measurement():
    meas = dp.m.make_laplace(
        dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float), scale=0.5
    )
    mech = pdp.from_opendp(meas, sensitivity=1.0)
    assert mech.sensitivity == 1.0 and mech.epsilon_spent == pytest.approx(2.0)


@pytest.mark.parametrize(
    "make, err, message",
    [
        (
            lambda: pdp.from_opendp(pdp.Laplace(scale=1.0)),
            TypeError,
            "from_opendp needs an OpenDP Measurement",
        ),
        (
            lambda: pdp.from_opendp(dp.m.make_randomized_response(categories=[0, 1, 2], prob=0.6)),
            ValueError,
            "from_opendp supports OpenDP's make_laplace and make_gaussian (integer or f64, scalar or vector), "
            "optionally chained after a transformation; this one is built by make_randomized_response.",
        ),
        (
            lambda: pdp.from_opendp(
                dp.m.make_laplace(
                    dp.atom_domain(T="f32", nan=False), dp.absolute_distance(T="f32"), scale=1.0
                )
            ),
            ValueError,
            "f32 outputs are rounded to 24 bits; release with T=float (f64)",
        ),
        (
            lambda: pdp.from_opendp(
                dp.m.make_laplace(
                    dp.atom_domain(T=float, nan=False),
                    dp.absolute_distance(T=float),
                    scale=1.0,
                    k=-3,
                )
            ),
            ValueError,
            "the measurement's noise lattice 2^k = 2^-3 is coarse for its scale 1.0",
        ),
    ],
)
def test_unsupported_measurements_are_refused(make, err, message):
    with pytest.raises(err, match=re.escape(message)):
        make()
