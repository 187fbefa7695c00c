"""HTTP request schemas (pydantic at the edge only); responses are built from the query dataclasses."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class LaunchBody(BaseModel):
    """`POST /api/runs`: a new scan, a new import of a file in the import folder, or a resume of a run."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: str = Field(max_length=32)
    path: str | None = Field(default=None, max_length=4096)
    resume_run_id: int | None = Field(default=None, ge=1)
