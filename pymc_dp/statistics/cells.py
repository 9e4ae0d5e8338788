r"""``Cells`` and ``Marginals``: release a latent count table, or sums of it over chosen axes.

The data is the table of counts itself, $c$ (any shape: one table of K cells, or a (G, K) table of
G areas), not the records behind it. This is the latent of choice when the table is all the release
depends on: a ``pm.Multinomial("c", n=N, p=pi)`` table (total public), or independent
``pm.Poisson`` / ``pm.NegativeBinomial`` cells (total unknown), cost $O(K)$ per sweep whatever
the number of people N (`pymc_dp.samplers.cells.TableCells`), where records cost $O(N)$.

* ``Cells()`` releases every cell: $s = c + \text{noise}$, the table's shape.
* ``Marginals(keep, shape=...)`` releases the margin on the axes ``keep`` of the table read as
  ``shape`` (row-major): $s_{i} = \sum_{\text{cells } k \text{ with kept coordinates } i} c_k$, e.g.
  the row totals of a 2 × 3 table, or per-area totals of a (G, K) table. Each margin released is
  its own ``DPObserved`` node with its own mechanism; ``pdp.privacy_spent`` composes them.

Neighbouring relation (``neighbouring=``), stated for the people counted in the table:

==================  =========================================  =======  =======
relation            what one person changes                    L1       L2
==================  =========================================  =======  =======
``"add/remove"``    one cell by 1 (so one entry of any margin)  1        1
``"replace-one"``   two cells by 1 (one down, one up)          2        √2
==================  =========================================  =======  =======

With ``"add/remove"`` the total is private too (use Poisson cells, or a Multinomial whose total is
public by assumption: say so with ``total=``); with ``"replace-one"`` the number of people is
public, so the grand total (``Marginals(keep=())``) has sensitivity 0 and is refused.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from pymc_dp.statistics.additive import Statistic

__all__ = ["Cells", "Marginals", "NEIGHBOURING"]

#: neighbouring relation -> (L1, L2) sensitivity of the table
NEIGHBOURING = {"add/remove": (1.0, 1.0), "replace-one": (2.0, math.sqrt(2.0))}


def _check_total(total):
    if total is None:
        return None
    t = np.asarray(total)
    if t.dtype.kind not in "iuf" or t.ndim > 1 or np.any(t < 0) or np.any(t != np.rint(t)):
        raise ValueError(
            f"total must be the public number of people in the table (an integer >= 0, or one per "
            f"area), got total={total!r}. Pass the declared N of the Multinomial table, or drop "
            "total= when the total is not public."
        )
    return int(t) if t.ndim == 0 else tuple(int(v) for v in t)


class Cells(Statistic):
    """The count table itself: one release per cell.

    Parameters
    ----------
    neighbouring : {"add/remove", "replace-one"}
        Which neighbouring datasets the privacy guarantee is for (module docstring): the L1/L2
        sensitivity the mechanism is calibrated with. Default ``"add/remove"``.
    total : int or sequence of int, optional
        The public number of people in the table (one number per area for a (G, K) table, summed
        over the last axis). ``pdp.release`` refuses a table with another total, and
        ``DPObserved`` a ``pm.Multinomial`` table whose ``n`` differs. Declaring it says the total
        is public (it is not protected by the release).
    queries : None
        Not taken: margins are released by `Marginals`, one ``DPObserved`` node per margin (a
        ``TypeError`` says so).

    Notes
    -----
    The node releases one noisy number per cell, ``s_k = c_k + noise_k``, in the table's shape.
    ``pdp.release(table, pdp.Cells(), mechanism)`` refuses negative or non-integer counts.
    """

    local = True
    record_additive = False
    #: the data is a latent count table (sampled by ``TableCells``, not by record samplers)
    latent_table = True

    def __init__(self, neighbouring: str = "add/remove", *, total=None, queries=None):
        if queries is not None:
            raise TypeError(
                f"Cells releases every cell of the table and takes no queries= (got "
                f"queries={queries!r}). Release each margin as its own node with its own noise: "
                "pdp.DPObserved(name, c, statistic=pdp.Marginals(keep), mechanism=..., "
                "observed=...) with keep the axes it keeps (e.g. (0,) for row totals); the "
                "table's steps move cells against every release of the table at once."
            )
        if neighbouring not in NEIGHBOURING:
            raise ValueError(
                f"neighbouring must be one of {sorted(NEIGHBOURING)}, got neighbouring={neighbouring!r}. "
                "Say which datasets are neighbours: one person added or removed ('add/remove'), or "
                "one person's answer replaced ('replace-one')."
            )
        self.neighbouring = neighbouring
        self.total = _check_total(total)

    def _table(self, data):
        import pytensor.tensor as pt

        self._check_data(data)
        if len(data) != 1:
            raise TypeError(f"{type(self).__name__} takes one count table, got {len(data)} arrays.")
        c = pt.as_tensor_variable(data[0])
        if not c.dtype.startswith(("int", "uint")):
            raise TypeError(
                f"{type(self).__name__} releases a table of counts and needs an integer table, got "
                f"dtype {c.dtype}. Use a pm.Multinomial, pm.Poisson, pm.NegativeBinomial or "
                "pm.Binomial table, or cast observed counts with .astype(int)."
            )
        return c

    def contributions(self, *data):
        return self._table(data)

    def entry_index(self, table_shape) -> np.ndarray:
        """For every cell of a table of ``table_shape``, the flat index of the released entry it
        counts in (``TableCells`` moves cells against every release at once with it)."""
        return np.arange(int(np.prod(table_shape, dtype=int)), dtype=np.int64).reshape(table_shape)

    def sensitivity(self, norm, *, n, dim):
        l1, l2 = NEIGHBOURING[self.neighbouring]
        return l1 if norm == 1 else l2

    def entries_changed(self, dim):
        return 1 if self.neighbouring == "add/remove" else 2  # one cell, or one down one up

    def params(self):
        return {"neighbouring": self.neighbouring, "total": self.total}

    def check_records(self, *data):
        c = np.asarray(data[0])
        name = type(self).__name__
        if c.dtype.kind == "f":
            if np.any(c != np.rint(c)):
                raise ValueError(
                    f"{name} releases counts, but the table holds non-integer entries. Pass the table "
                    "of counts (integers >= 0), e.g. np.bincount(codes, minlength=K)."
                )
        elif c.dtype.kind not in "iub":
            raise TypeError(f"{name} needs a table of integer counts, got dtype {c.dtype}.")
        if np.any(c < 0):
            raise ValueError(
                f"{name} releases counts, but the table holds negative entries. Pass the table of "
                "counts (integers >= 0)."
            )
        if self.total is not None:
            sums = c.sum(axis=-1)
            if np.shape(self.total) not in ((), sums.shape) or np.any(
                sums != np.asarray(self.total)
            ):
                raise ValueError(
                    f"{self!r} declares the number of people in the table (summed "
                    f"over its last axis, shape {sums.shape}), but the table's totals differ. Pass "
                    "the table the total was declared for, or the declared total of this table."
                )

    def __repr__(self):
        extra = "" if self.total is None else f", total={self.total!r}"
        return f"{type(self).__name__}(neighbouring={self.neighbouring!r}{extra})"


class Marginals(Cells):
    """The margin of a latent count table on the axes ``keep``: sums over the other axes.

    Parameters
    ----------
    keep : sequence of int
        Axes of the table (read as ``shape``) that the margin keeps, increasing; the others are
        summed. ``keep=(0,)`` of a 2 × 3 table: the two row totals; ``keep=(0,)`` of a (G, K)
        table: one total per area; ``keep=()``: the grand total.
    shape : sequence of int, optional
        How to read the table: its entries in row-major order reshaped to ``shape`` (e.g. a
        ``pm.Multinomial`` table of 6 cells read as 2 × 3, or a (G, 6) table as (G, 2, 3)).
        Default: the table's own shape.
    neighbouring : {"add/remove", "replace-one"}
        As for `Cells` (module docstring). One person moves one entry of the margin by 1
        (add/remove), or two entries (replace-one).
    total : int or sequence of int, optional
        As for `Cells`.
    """

    def __init__(self, keep, *, shape=None, neighbouring: str = "add/remove", total=None):
        super().__init__(neighbouring, total=total)
        keep = (keep,) if isinstance(keep, numbers.Integral) else keep
        try:
            keep = tuple(keep)
        except TypeError:
            keep = None
        if keep is None or not all(
            isinstance(a, numbers.Integral) and not isinstance(a, bool) and a >= 0 for a in keep
        ):
            raise ValueError(
                f"keep must be the axes the margin keeps (non-negative integers, e.g. keep=(0,) for "
                f"row totals), got keep={keep!r}."
            )
        keep = tuple(int(a) for a in keep)
        if list(keep) != sorted(set(keep)):
            raise ValueError(
                f"keep must list distinct axes in increasing order, got keep={keep!r}. Write "
                f"keep={tuple(sorted(set(keep)))!r}."
            )
        if shape is not None:
            try:
                shape = tuple(int(s) for s in shape)
            except TypeError:
                shape = None
            if shape is None or any(s < 1 for s in shape):
                raise ValueError(
                    "shape must be how to read the table (positive integers, e.g. shape=(2, 3) for "
                    "a 6-cell table), got a value that is not a sequence of positive integers."
                )
            if keep and keep[-1] >= len(shape):
                raise ValueError(
                    f"keep={keep!r} names axis {keep[-1]}, but shape={shape!r} has {len(shape)} axes."
                )
        if not keep and neighbouring == "replace-one":
            raise ValueError(
                "Marginals(keep=()) releases the grand total, which is public under "
                "neighbouring='replace-one' (its sensitivity is 0): a release adds nothing. Use "
                "neighbouring='add/remove' if the total is private, or declare it with total=."
            )
        self.keep, self.shape = keep, shape

    def _read_shape(self, table_shape):
        table_shape = tuple(int(s) for s in table_shape)
        shape = table_shape if self.shape is None else self.shape
        if int(np.prod(shape, dtype=int)) != int(np.prod(table_shape, dtype=int)):
            raise ValueError(
                f"{self!r} reads the table as shape={shape}, but the table has shape {table_shape} "
                f"({int(np.prod(table_shape, dtype=int))} cells). Pass shape= with the table's "
                "number of cells, e.g. shape=(G, 2, 3) for a (G, 6) table."
            )
        if self.keep and self.keep[-1] >= len(shape):
            raise ValueError(
                f"{self!r} keeps axis {self.keep[-1]}, but the table is read with {len(shape)} axes "
                f"(shape {shape}). Keep axes below {len(shape)}, or pass shape=."
            )
        return shape

    def contributions(self, *data):
        import pytensor.tensor as pt

        c = self._table(data)
        static = c.type.shape  # (at release the values' shape is checked by check_records)
        if None not in static:
            shape = self._read_shape(static)
        elif self.shape is None:
            shape = (None,) * c.ndim
        else:
            shape = self.shape
        if self.keep and self.keep[-1] >= len(shape):
            raise ValueError(
                f"{self!r} keeps axis {self.keep[-1]}, but the table has {len(shape)} axes. Keep "
                "axes below that, or pass shape=."
            )
        drop = tuple(a for a in range(len(shape)) if a not in self.keep)
        out = c if self.shape is None else pt.reshape(c, shape)
        return out.sum(axis=drop) if drop else out

    def entry_index(self, table_shape) -> np.ndarray:
        shape = self._read_shape(table_shape)
        kept = [s for a, s in enumerate(shape) if a in self.keep]
        coords = np.indices(shape, dtype=np.int64)
        if not kept:
            return np.zeros(tuple(table_shape), dtype=np.int64)
        flat = np.ravel_multi_index(tuple(coords[a] for a in self.keep), kept)
        return flat.astype(np.int64).reshape(tuple(table_shape))

    def check_records(self, *data):
        super().check_records(*data)
        self._read_shape(np.shape(data[0]))

    def params(self):
        return {**super().params(), "keep": self.keep, "shape": self.shape}

    def __repr__(self):
        extra = "" if self.shape is None else f", shape={self.shape!r}"
        extra += "" if self.total is None else f", total={self.total!r}"
        return f"Marginals(keep={self.keep!r}{extra}, neighbouring={self.neighbouring!r})"
