"""Lanes and helpers for batch-job tests."""

from __future__ import annotations

from typing import Any

from laneway.batch import BatchJob, ItemResult
from laneway.config.models import LanewayConfig
from tests.helpers import Upstream, sim_url


def embed_config(
    sim: Upstream, spec: str, model: str = "embed-model", **lane: Any
) -> LanewayConfig:
    """One embed lane ``emb`` on one sim source behaving as ``spec``, priced."""
    source = {
        "base_url": sim_url(sim, spec),
        "model": model,
        "price": {"input": 0.02},
    }
    body = {"kind": "embed", "sources": [source], **lane}
    return LanewayConfig.model_validate({"lanes": {"emb": body}})


async def collect(job: BatchJob) -> list[ItemResult]:
    """Every result of ``job``, in the order yielded."""
    return [result async for result in job]


def texts(count: int) -> list[str]:
    """``count`` distinct texts."""
    return [f"passage {n} of the corpus" for n in range(count)]
