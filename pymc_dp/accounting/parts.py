r"""What ``privacy_spent`` composes: one part per release or run, each release counted once, and
parallel composition over the cells of a partition.

Each release, ``DPObserved`` node, data-holder run or ``dp_accounting`` event is a `Part`.

**Once per release.** A Release carries an identity (``release.release_id``, kept by copies and
pickles); the parts of one identity are counted once, however often it is passed (``[r, r]``, a
model that observes ``r`` and ``r`` itself). Distinct releases count separately even when their
values are equal.

**Parallel composition.** A release may state the disjoint group of people it was computed from,
``partition=(key, cell)`` (``pdp.release(..., partition=("age_band", "30-39"))`` or
``pdp.DPObserved(..., partition=...)``). For one key the cells are disjoint: every person is in
exactly one cell, and the cell of each person is public (the record counts ``n`` of the releases
are public already). A neighbouring dataset replaces one person's record by another of the same
cell, so it changes the inputs of that cell's releases only. The privacy loss of a neighbouring
pair is then the sequential composition of

* every release without a partition (they may touch anyone), and
* for each key, the releases of the one cell the person is in,

and the guarantee is the largest over the choices of one cell per key:

$$\varepsilon(\delta) = \max_{c_1, c_2, \ldots}\; \varepsilon_\delta\Big(\textstyle
\bigotimes_{\text{no partition}} \otimes \bigotimes_{\text{cell } c_1 \text{ of key } 1}
\otimes \bigotimes_{\text{cell } c_2 \text{ of key } 2} \cdots\Big)$$

(max over cells, sequential within a cell and across keys). Each choice is composed by the
accountant exactly as a list without partitions; cells whose releases have the same events are
one choice. If the cell of a person is itself confidential (a neighbour could move a person to
another cell), do not state a partition: sequential composition is the bound then.
"""

from __future__ import annotations

import dataclasses
import itertools

__all__ = ["MAX_CHOICES", "Part", "cell_choices", "mechanism_part", "model_nodes", "unique_parts"]

MAX_CHOICES = 4096  # choices of one cell per key that privacy_spent composes one by one


@dataclasses.dataclass(frozen=True)
class Part:
    """One thing that spent privacy: a ``dp_accounting`` event, or an ``(ε, δ)`` pair without one.

    ``release_id`` identifies a release (None: a run, an event, a bare-array node); ``partition``
    is its ``(key, cell)`` or None.
    """

    event: object = None
    approx: tuple | None = None  # (epsilon, delta) of a mechanism without a dp_accounting event
    partition: tuple | None = None
    release_id: str | None = None
    label: str = ""
    epsilon: float | None = None  # pure ε of the event, when it is pure ε-DP
    rho: float | None = None  # zCDP ρ of the event, when it is ρ-zCDP
    neighbouring: str | None = None  # the relation its guarantee is for (None: a bare event)

    def signature(self):
        return repr(self.event) if self.approx is None else repr(self.approx)


def unique_parts(parts):
    """``parts`` with each release identity kept once (its partition: the one stated)."""
    seen, out = {}, []
    for part in parts:
        rid = part.release_id
        if rid is None:
            out.append(part)
            continue
        if rid not in seen:
            seen[rid] = len(out)
            out.append(part)
            continue
        first = out[seen[rid]]
        if part.partition is not None and first.partition is None:
            out[seen[rid]] = dataclasses.replace(first, partition=part.partition)
        elif part.partition is not None and part.partition != first.partition:
            raise ValueError(
                f"{part.label} and {first.label} are the same release (release id {rid}) with "
                f"different partitions {first.partition!r} and {part.partition!r}. A release is "
                "computed from one group of people: state the partition once (on the release)."
            )
    return out


def cell_choices(parts):
    """Every list of parts a neighbouring pair can touch: the parts without a partition plus,
    for each partition key, the parts of one of its cells (cells with equal events merged).

    Returns
    -------
    list of (list of Part, dict key -> cell)
    """
    whole = [p for p in parts if p.partition is None]
    keys: dict = {}
    for p in parts:
        if p.partition is not None:
            key, cell = p.partition
            keys.setdefault(key, {}).setdefault(cell, []).append(p)
    options = []
    for key, cells in keys.items():
        distinct = {}
        for cell, members in cells.items():
            sig = tuple(sorted(m.signature() for m in members))
            distinct.setdefault(sig, (cell, members))
        options.append([(key, cell, members) for cell, members in distinct.values()])
    count = 1
    for opt in options:
        count *= len(opt)
    if count > MAX_CHOICES:
        raise ValueError(
            f"the partitions {sorted(keys)} give {count} combinations of one cell per key with "
            f"different mechanisms, more than {MAX_CHOICES} to compose one by one. Use fewer keys, "
            "or the same mechanism in every cell of a key (equal cells are composed once)."
        )
    out = []
    for combo in itertools.product(*options):
        chosen = list(whole)
        for _, _, members in combo:
            chosen.extend(members)
        out.append((chosen, {key: cell for key, cell, _ in combo}))
    return out


def mechanism_part(mech, what, *, partition=None, release_id=None, neighbouring=None):
    """The part of one mechanism applied once (a release or a node), from the facts the
    mechanism states: its ``epsilon_delta`` when it has no ``dp_accounting`` event, else its
    ``dp_event()`` with its pure ``epsilon_spent`` and zCDP ``rho_spent`` (None when not so)."""
    import dp_accounting

    approx = mech.epsilon_delta
    if approx is not None:
        eps, dlt = approx
        return Part(
            approx=(float(eps), float(dlt)),
            partition=partition,
            release_id=release_id,
            label=what,
            neighbouring=neighbouring,
        )
    ev = mech.dp_event()
    if isinstance(ev, dp_accounting.UnsupportedDpEvent):
        raise ValueError(
            f"{what} uses {mech!r}, whose privacy has no dp_accounting event and no "
            "(epsilon, delta); it cannot be composed. Compose it by hand."
        )
    return Part(
        event=ev,
        partition=partition,
        release_id=release_id,
        label=what,
        epsilon=mech.epsilon_spent,
        rho=mech.rho_spent,
        neighbouring=neighbouring,
    )


def model_nodes(model):
    """The release nodes of ``model``, with those ``marginalize`` turned into potentials."""
    from pymc_dp.distributions.registry import dp_nodes, get_extra

    nodes = dict(dp_nodes(model))
    collapsed = get_extra(model, "collapsed")
    if collapsed is not None:
        original = dp_nodes(collapsed["original"])
        for plan in collapsed["plans"].values():
            nodes.update({name: original[name] for name in plan.nodes if name in original})
    return nodes
