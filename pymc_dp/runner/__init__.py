"""Many independent posteriors at once: `sample_many` on Dask (a laptop or a cluster), and
`map_units` for any Monte Carlo grid."""

from pymc_dp.runner.many import (
    ManyResult,
    local_cluster,
    map_units,
    sample_many,
    unit_seed,
    worker_cache,
)

__all__ = ["ManyResult", "local_cluster", "map_units", "sample_many", "unit_seed", "worker_cache"]
