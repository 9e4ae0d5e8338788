"""Where `sample_many` keeps finished units: one NetCDF file and one JSON record per unit.

Layout of an output directory:

```
outdir/
  manifest.json          what call made these files, with digests of its functions' code
                         (refuses a different call unless overwrite=True)
  units/<key>.nc         the unit's InferenceData / DataTree (written atomically: tmp + rename)
  units/<key>.json       its record: status "ok" | "error", summary rows, route, seconds, error text
```

A unit is finished when its JSON record says ``"ok"`` and its NetCDF file exists; a re-run of the
same call skips finished units and runs the others again (errors included).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

__all__ = ["Store", "unit_key"]

_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def unit_key(unit) -> str:
    """A file-name-safe key for ``unit``, stable across processes and runs.

    Built from ``repr(unit)`` (ints, strings, tuples of them, … have a stable repr): a readable
    prefix and a hash, so two units never share a file even when their prefixes agree.
    """
    text = repr(unit)
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    prefix = _SAFE.sub("_", str(unit)).strip("_")[:48] or "unit"
    return f"{prefix}-{digest}"


class Store:
    """The output directory of one `sample_many` call."""

    def __init__(self, outdir, manifest: dict, *, overwrite: bool = False):
        self.root = Path(outdir)
        self.units = self.root / "units"
        self.units.mkdir(parents=True, exist_ok=True)
        path = self.root / "manifest.json"
        if path.exists():
            old = json.loads(path.read_text())
            if old != manifest and not overwrite:
                diff = sorted(k for k in set(old) | set(manifest) if old.get(k) != manifest.get(k))
                raise ValueError(
                    f"outdir={str(self.root)!r} holds the results of a different sample_many call "
                    f"(it differs in {', '.join(diff)}). {_why(diff, old)}Use another outdir, or "
                    "pass overwrite=True to discard those results."
                )
            if old != manifest:  # overwrite=True: start afresh
                for f in self.units.iterdir():
                    f.unlink()
        _atomic_write_text(path, json.dumps(manifest, indent=1, sort_keys=True))

    # -- one unit -------------------------------------------------------------------------------
    def record_path(self, key: str) -> Path:
        return self.units / f"{key}.json"

    def data_path(self, key: str) -> Path:
        return self.units / f"{key}.nc"

    def finished(self, key: str) -> dict | None:
        """The unit's record if it finished (status ok and its trace on disk), else None."""
        rec = self.read(key)
        if rec is not None and rec.get("status") == "ok" and self.data_path(key).exists():
            return rec
        return None

    def read(self, key: str) -> dict | None:
        path = self.record_path(key)
        if not path.exists():
            return None
        try:
            return json.loads(path.read_text())
        except json.JSONDecodeError:  # a torn write from a killed process: not finished
            return None

    def write(self, key: str, record: dict, idata=None) -> None:
        """Trace first, record last: a record saying "ok" always has its trace beside it."""
        if idata is not None:
            save_idata(idata, self.data_path(key))
        _atomic_write_text(self.record_path(key), json.dumps(record, default=str))

    def load(self, key: str):
        return load_idata(self.data_path(key))


def _why(diff, old) -> str:
    """Why a changed function's code refuses a resume (the manifest keys ``<fn>_code``)."""
    code = [k.removesuffix("_code") for k in diff if k.endswith("_code")]
    if not code:
        return ""
    if not any(k.endswith("_code") for k in old):
        return (
            "Its manifest was written before sample_many recorded what build, data and step "
            "compute, so they cannot be compared with this call's. "
        )
    return (
        f"The code of {' and '.join(code)} (or a value it reads: a module-level constant, a "
        "closure variable, a default) is not the one that sampled those units: resuming would "
        "return posteriors of the old model. "
    )


def save_idata(idata, path: Path) -> None:
    """Write an InferenceData (ArviZ 0.x) or DataTree (ArviZ 1.x) to NetCDF, atomically."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    idata.to_netcdf(str(tmp), engine="h5netcdf")
    os.replace(tmp, path)


def load_idata(path: Path):
    """Read a unit's trace back into memory (closing the file)."""
    import arviz as az

    data = az.from_netcdf(str(path))
    load = getattr(data, "load", None)
    if callable(load):
        data = load() or data
    return data


def _atomic_write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
