r"""``Cells``: release a latent count table as it is.

The data is the table of counts itself, $c = (c_1, \dots, c_K)$ (any shape; one released
number per cell), not the records behind it. This is the latent of choice when the table is all the
release depends on: a ``pm.Multinomial("c", n=N, p=pi)`` table (total public) or independent
``pm.Poisson`` cells (total unknown) cost $O(K)$ per sweep whatever the number of people N
(`pymc_dp.samplers.cells.TableCells`), where records cost $O(N)$.

Neighbouring relation (``neighbouring=``), stated for the people counted in the table:

==================  =========================================  =======  =======
relation            what one person changes                    L1       L2
==================  =========================================  =======  =======
``"add/remove"``    one cell by 1                              1        1
``"replace-one"``   two cells by 1 (one down, one up)          2        √2
==================  =========================================  =======  =======

With ``"add/remove"`` the total is private too (use Poisson cells, or a Multinomial whose total is
public by assumption); with ``"replace-one"`` the number of people is public.
"""

from __future__ import annotations

import math

import numpy as np

from pymc_dp.statistics.additive import Statistic

__all__ = ["Cells", "NEIGHBOURING"]

#: neighbouring relation -> (L1, L2) sensitivity of the table
NEIGHBOURING = {"add/remove": (1.0, 1.0), "replace-one": (2.0, math.sqrt(2.0))}


class Cells(Statistic):
    """The count table itself: one release per cell (the data's axis 0 holds the cells).

    Parameters
    ----------
    neighbouring : {"add/remove", "replace-one"}
        Which neighbouring datasets the privacy guarantee is for (module docstring): the L1/L2
        sensitivity the mechanism is calibrated with. Default ``"add/remove"``.

    Notes
    -----
    The cells are the "records" of ``DPObserved``: the node releases one noisy number per cell,
    ``s_k = c_k + noise_k``. ``pdp.release(table, pdp.Cells(), mechanism)`` refuses negative or
    non-integer counts.
    """

    local = True
    record_additive = False
    #: the data is a latent count table (sampled by ``TableCells``, not by record samplers)
    latent_table = True

    def __init__(self, neighbouring: str = "add/remove"):
        if neighbouring not in NEIGHBOURING:
            raise ValueError(
                f"neighbouring must be one of {sorted(NEIGHBOURING)}, got neighbouring={neighbouring!r}. "
                "Say which datasets are neighbours: one person added or removed ('add/remove'), or "
                "one person's answer replaced ('replace-one')."
            )
        self.neighbouring = neighbouring

    def contributions(self, *data):
        import pytensor.tensor as pt

        self._check_data(data)
        if len(data) != 1:
            raise TypeError(f"Cells takes one count table, got {len(data)} arrays.")
        c = pt.as_tensor_variable(data[0])
        if not c.dtype.startswith(("int", "uint")):
            raise TypeError(
                f"Cells releases a table of counts and needs an integer table, got dtype {c.dtype}. "
                "Use a pm.Multinomial or pm.Poisson table, or cast observed counts with .astype(int)."
            )
        return c

    def sensitivity(self, norm, *, n, dim):
        l1, l2 = NEIGHBOURING[self.neighbouring]
        return l1 if norm == 1 else l2

    def params(self):
        return {"neighbouring": self.neighbouring}

    def check_records(self, *data):
        c = np.asarray(data[0])
        if c.dtype.kind == "f":
            if np.any(c != np.rint(c)):
                raise ValueError(
                    "Cells releases counts, but the table holds non-integer entries. Pass the table "
                    "of counts (integers >= 0), e.g. np.bincount(codes, minlength=K)."
                )
        elif c.dtype.kind not in "iub":
            raise TypeError(f"Cells needs a table of integer counts, got dtype {c.dtype}.")
        if np.any(c < 0):
            raise ValueError(
                "Cells releases counts, but the table holds negative entries. Pass the table of "
                "counts (integers >= 0)."
            )

    def __repr__(self):
        return f"Cells(neighbouring={self.neighbouring!r})"
