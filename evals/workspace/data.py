"""What a record of a task over files keeps (registered by the workspace environment as it
enters the registry)."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict

from evals.record import Data


class WorkspaceData(Data):
    """A folder of files: nothing beyond what every record keeps."""

    model_config = ConfigDict(extra="forbid")

    name: Literal["workspace"] = "workspace"
