"""Chain slots of a budget shared by processes: how many chains a budgeted step has started.

A budgeted data-holder step declared for ``chains=c`` gives each chain ``1/c`` of the budget.
PyMC runs chains in worker processes (``cores > 1``), each on its own copy of the step, so no
copy can count the chains the others ran: without a shared count, ``pm.sample(chains=4)`` on a
step declared for ``chains=2``, or a second ``pm.sample`` call with the same step, spends more
than the budget. The ledger is that shared count: ``c`` slot files in the temporary directory,
named by a token drawn when the step is built (copies carry the token). A chain claims the first
free slot by creating its file atomically (``O_CREAT | O_EXCL``, atomic on POSIX and Windows
local file systems), so at most ``c`` chains of the step ever get a share, on this machine,
whatever process runs them. Processes on other machines (a Dask cluster) do not see the files:
run budgeted chains on one machine.
"""

from __future__ import annotations

import glob
import os
import secrets
import tempfile

__all__ = ["ChainLedger"]

#: the directory of the slot files
LEDGER_DIR = os.path.join(tempfile.gettempdir(), "pymc_dp_chain_ledgers")


class ChainLedger:
    """``slots`` chain slots under a fresh token (module docstring); picklable."""

    def __init__(self, slots: int):
        self.slots = int(slots)
        self.token = secrets.token_hex(16)
        try:
            os.makedirs(LEDGER_DIR, exist_ok=True)
        except OSError as err:
            raise RuntimeError(
                f"a budget shared by chains=... needs a writable directory for its chain ledger "
                f"({LEDGER_DIR}, in the temporary directory), and it cannot be created: {err}. "
                "Point TMPDIR to a writable directory on this machine."
            ) from err

    def _path(self, i: int) -> str:
        return os.path.join(LEDGER_DIR, f"{self.token}.{i}")

    def claim(self) -> int | None:
        """The slot this call took (0 … slots − 1), or None when every slot is taken."""
        os.makedirs(LEDGER_DIR, exist_ok=True)
        for i in range(self.slots):
            try:
                fd = os.open(self._path(i), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
            except FileExistsError:
                continue
            except OSError as err:  # before any data are read: the chain cannot be counted
                raise RuntimeError(
                    f"the chain ledger of a budget shared by chains=... cannot write its slot in "
                    f"{LEDGER_DIR}: {err}. Point TMPDIR to a writable directory on this machine."
                ) from err
            os.write(fd, str(os.getpid()).encode())
            os.close(fd)
            return i
        return None

    def claimed(self) -> int:
        """How many slots are taken."""
        return sum(os.path.exists(self._path(i)) for i in range(self.slots))

    def remove(self) -> None:
        """Delete the slot files (when the step that made the ledger is gone)."""
        for path in glob.glob(os.path.join(LEDGER_DIR, f"{self.token}.*")):
            try:
                os.remove(path)
            except OSError:
                pass
