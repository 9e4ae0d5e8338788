"""Many independent posteriors at once: `sample_many` on Dask (a laptop or a cluster)."""

from pymc_dp.runner.many import ManyResult, local_cluster, map_units, sample_many, unit_seed

__all__ = ["ManyResult", "local_cluster", "map_units", "sample_many", "unit_seed"]
