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
    """The first model's `mu` gets ConjugateTheta (above): no page says NUTS for it, in any wording
    ("mu gets NUTS", "assigns NUTS to `mu`", "NUTS on mu"). Other pages' models with a parameter
    named mu differ (docs/tables.md's NegativeBinomial mean does get NUTS)."""
    claim = re.compile(r"\bmu\b[^.\n]{0,20}\bNUTS\b|\bNUTS\b[^.\n]{0,20}\bmu\b", re.I)
    for page in [ROOT / "README.md", ROOT / "docs" / "index.md"]:
        assert not claim.search(page.read_text()), (page, claim.search(page.read_text()))


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


def _claimed(page, comment):
    """The page's ``idata = pm.sample()  # <comment>`` line is there, as the test below checks."""
    assert f"idata = pm.sample()  # {comment}" in (ROOT / "docs" / page).read_text(), (
        page,
        comment,
    )


def test_tables_page_other_assignment_comments():
    """docs/tables.md: the Counts model, the Marginals model and the NegativeBinomial model get the
    steps their `pm.sample()` comments name."""
    codes = np.random.default_rng(0).integers(0, 16, size=4000)  # the page's K, N
    noisy = pdp.release(codes, pdp.Counts(16), pdp.DiscreteGaussian(sigma=3.18), rng=1)
    with pm.Model() as counts:
        pi = pm.Dirichlet("pi", np.ones(16))
        x = pm.Categorical("x", pi, shape=4000)
        pdp.DPObserved(
            "c", x, statistic=pdp.Counts(16), mechanism=pdp.DiscreteGaussian(sigma=3.18),
            observed=noisy,
        )  # fmt: skip
    assert assigned(counts) == {"ConjugateTheta": ["pi_simplex__"], "DataAugmentation": ["x"]}
    _claimed("tables.md", "DataAugmentation on x, ConjugateTheta on pi")

    rng = np.random.default_rng(1)
    table = rng.multinomial(60, np.full(6, 1 / 6))
    rels = [
        pdp.release(table, pdp.Cells(), pdp.DiscreteGaussian(sigma=3.0), rng=rng),
        pdp.release(table, pdp.Marginals((0,), shape=(2, 3)), pdp.DiscreteGaussian(sigma=1.0), rng=rng),
        pdp.release(table, pdp.Marginals((1,), shape=(2, 3)), pdp.DiscreteGaussian(sigma=1.0), rng=rng),
    ]  # fmt: skip
    with pm.Model() as margins:
        pi = pm.Dirichlet("pi", np.ones(6))
        c = pm.Multinomial("c", n=60, p=pi)
        for name, rel in zip(("cells", "rows", "cols"), rels, strict=True):
            pdp.DPObserved(name, c, statistic=rel.statistic, mechanism=rel.mechanism, observed=rel)
    assert assigned(margins) == {"DirichletCells": ["c", "pi_simplex__"]}
    _claimed("tables.md", "DirichletCells on pi and c")

    with pm.Model() as negbin:
        mu = pm.Gamma("mu", 2.0, 0.1)
        c = pm.NegativeBinomial("c", mu=mu, alpha=2.0, shape=5)
        pdp.DPObserved(
            "s", c, statistic=pdp.Cells(), mechanism=pdp.DiscreteGaussian(sigma=3.18),
            observed=np.array([12, 30, 3, 0, 17]),
        )  # fmt: skip
    assert assigned(negbin) == {"Collapsed": ["c", "mu_log__"]}
    _claimed("tables.md", "Collapsed on mu and c")


def test_collapsed_page_assignment_comments():
    """docs/collapsed.md: NUTS on pi of the marginalized model, Collapsed on pi and x without it."""
    mech = pdp.RandomizedResponse(1.0, n_categories=4)
    codes = np.random.default_rng(0).integers(0, 4, size=400)
    answers = pdp.release(codes, pdp.Local(), mech, rng=1)
    with pm.Model() as model:
        pi = pm.Dirichlet("pi", np.ones(4))
        x = pm.Categorical("x", pi, shape=400)
        pdp.DPObserved("r", x, statistic=pdp.Local(), mechanism=mech, observed=answers)
    assert assigned(pdp.marginalize(model)) == {"NUTS": ["pi_simplex__"]}
    _claimed("collapsed.md", "NUTS on pi")
    assert assigned(model) == {"Collapsed": ["pi_simplex__", "x"]}
    _claimed("collapsed.md", 'prints "Collapsed: [pi, x]"; idata.posterior["x"] holds the records')
