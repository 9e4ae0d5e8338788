"""What the README and the docs say `pm.sample()` picks is what it picks (issue 21.5)."""

import re
from pathlib import Path

import numpy as np
import pymc as pm

import pymc_dp as pdp
from tests.support.sampling import assigned

ROOT = Path(__file__).resolve().parents[3]


def test_readme_and_index_snippet_assignment():
    rng = np.random.default_rng(1)
    x_conf = rng.normal(1.0, 1.0, size=200)
    release = pdp.release(
        x_conf, statistic=pdp.Mean(lower=-2, upper=4), mechanism=pdp.Laplace(epsilon=1.0), rng=rng
    )
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 3)
        x = pm.Normal("x", mu, 1.0, shape=200)
        pdp.DPObserved(
            "s_dp",
            x,
            statistic=pdp.Mean(lower=-2, upper=4),
            mechanism=pdp.Laplace(epsilon=1.0),
            observed=release,
        )
    assert assigned(model) == {"ConjugateTheta": ["mu"], "DataAugmentation": ["x"]}
    claim = "x gets pdp.DataAugmentation, mu pdp.ConjugateTheta"
    for page in ("README.md", "docs/index.md"):
        assert claim in (ROOT / page).read_text(), page


def test_no_page_claims_nuts_for_the_conjugate_parameters():
    for page in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]:
        assert not re.search(r"mu gets NUTS automatically", page.read_text()), page


def test_tables_page_latent_table_assignment():
    """docs/tables.md's first table model: π and c go to one DirichletCells, as the page says."""
    with pm.Model() as model:
        pi = pm.Dirichlet("pi", np.ones(16))
        c = pm.Multinomial("c", n=4000, p=pi)
        pdp.DPObserved(
            "s",
            c,
            statistic=pdp.Cells(),
            mechanism=pdp.DiscreteGaussian(sigma=3.18),
            observed=np.full(16, 250),
        )
    assert assigned(model) == {"DirichletCells": ["c", "pi_simplex__"]}
    assert (
        "idata = pm.sample()  # DirichletCells on pi and c"
        in (ROOT / "docs" / "tables.md").read_text()
    )
