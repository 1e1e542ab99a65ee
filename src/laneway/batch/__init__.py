"""Batch jobs on lanes: a corpus embedded or a prompt set run, resumable and verified.

Client layer (beside ``laneway.client``, above the engine): ``BatchJob``
drives the engine's calls; ``laneway batch`` and ``Laneway.batch`` /
``Laneway.embed_many`` are its faces. See ``docs/batch.md``.
"""

from laneway.batch.items import InputSet, Item, items_of, read_input
from laneway.batch.jobdir import JobDir, Manifest
from laneway.batch.progress import Progress
from laneway.batch.results import ItemError, ItemResult
from laneway.batch.runner import BatchJob, BatchOptions
from laneway.batch.tally import Tally
from laneway.core.errors import BatchStopped, JobMismatch

__all__ = [
    "BatchJob",
    "BatchOptions",
    "BatchStopped",
    "InputSet",
    "Item",
    "ItemError",
    "ItemResult",
    "JobDir",
    "JobMismatch",
    "Manifest",
    "Progress",
    "Tally",
    "items_of",
    "read_input",
]
