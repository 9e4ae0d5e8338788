"""docs/penalty.md's examples run as written (issue 22.2: the first one ended in PrivacyBudgetExceeded).

Every ```python block of the page is executed in order in one namespace, with warnings visible.
"""

import re
import warnings
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[3] / "docs" / "penalty.md"


def _blocks():
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.DOTALL)


def test_the_page_has_examples():
    assert len(_blocks()) >= 2


@pytest.mark.parametrize("i", range(len(_blocks())))
def test_penalty_doc_snippet_runs(i):
    from pymc_dp.samplers.penalty import BudgetExhaustedWarning

    code = _blocks()[i]
    namespace = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error", BudgetExhaustedWarning)  # the example must fit its budget
        exec(compile(code, f"{DOC.name}[{i}]", "exec"), namespace)
    if "idata" in namespace:
        import numpy as np

        ss = namespace["idata"]["sample_stats"]
        assert not np.asarray(ss["dp_budget_exhausted"]).any()
        assert namespace["eps"] <= 30.0
        assert "dp_accepted" in namespace["public"]["sample_stats"]  # published: it mixed
        post = np.asarray(namespace["idata"]["posterior"]["mu"]).mean(axis=(0, 1))
        assert np.allclose(post, [0.5, -1.0], atol=0.1)  # the example's chains reach the posterior
