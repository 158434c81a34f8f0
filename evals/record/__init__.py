"""The records an eval writes, typed and versioned; the one owner of their shape. It imports
no stage of evals: tasks, scoring, environments, the run and the report all read and write
records through these models.

* :mod:`~evals.record.spec`: what ran (:class:`RunSpec`), once per eval;
* :mod:`~evals.record.run`: one task run (:class:`RunRecord`) and what an error is;
* :mod:`~evals.record.environments`: what each environment adds to a record;
* :mod:`~evals.record.bfcl`: one BFCL item;
* :mod:`~evals.record.versioned`: reading a record of any version;
* :mod:`~evals.record.files`: run files and the files kept beside them.
"""

from evals.record.environments import (
    Data,
    EnvironmentData,
    OtherData,
    own_settings,
    preset_used,
    register,
)
from evals.record.files import (
    beside,
    committed,
    keep_compact,
    kept_at,
    kept_file,
    read_records,
    read_text,
    relink,
    run_files,
    slug,
    task_folder,
)
from evals.record.run import (
    ERROR,
    NOT_RUN,
    RECORD_VERSION,
    ConversationRecord,
    RunRecord,
    UserRecord,
    UserTurn,
    is_error,
    read_runs,
)
from evals.record.spec import PresetRecord, RunSpec, code_version, machine

__all__ = [
    "ERROR",
    "NOT_RUN",
    "RECORD_VERSION",
    "ConversationRecord",
    "Data",
    "EnvironmentData",
    "OtherData",
    "PresetRecord",
    "RunRecord",
    "RunSpec",
    "UserRecord",
    "UserTurn",
    "beside",
    "code_version",
    "committed",
    "is_error",
    "keep_compact",
    "kept_at",
    "kept_file",
    "machine",
    "own_settings",
    "preset_used",
    "read_records",
    "read_runs",
    "read_text",
    "register",
    "relink",
    "run_files",
    "slug",
    "task_folder",
]
