"""What one eval is asked to do (``EvalSettings``), saved beside its run file so that
``--resume`` goes on with the same settings and run ids."""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime
from pathlib import Path
from typing import Any

from evals.errors import EvalError
from evals.record import RunRecord, is_error, read_runs, task_folder
from evals.record.spec import OLD_LOOP_KEYS
from evals.run.servers import Serving
from evals.tasks import DEFAULT_TASKS
from harness.config import FLAGGED, LoopConfig, flagged
from harness.presets import PLAIN, Preset, preset
from harness.sql.postgres import public_url

# How a field of EvalSettings is kept: LOOP, in every record's ``loop`` (it changes what a
# task run does); CONVERSATION, in the records of a task set that holds a conversation, under
# ``conversation`` (the simulated user's and the conversation's settings: a task without a
# user reads none of them); RESUMED, taken by a resumed eval from the one it continues (as are
# the serving's model and wire shape and the loop's flagged fields; not where the servers are,
# nor how many task runs are in flight: neither changes a record).
LOOP = {"loop": True, "resumed": True}
CONVERSATION = {"conversation": True, "resumed": True}
RESUMED_ONLY = {"resumed": True}


@dataclass
class EvalSettings:
    # Where the requests go, how many at once, which model in which wire shape (the model and
    # the shape are kept for a resumed eval; the servers may move).
    serving: Serving
    tasks: Path = field(default=DEFAULT_TASKS, metadata=RESUMED_ONLY)
    epochs: int = field(default=1, metadata=RESUMED_ONLY)
    # The loop's limits, sampling and tool-error wording (``harness.config``; its preset's
    # settings are ``preset``'s). Its seed is the first epoch's: epoch e of a task asks for
    # seed + e - 1, so epochs differ from each other and a rerun repeats them.
    loop: LoopConfig = field(default_factory=lambda: eval_loop())
    label: str | None = field(default=None, metadata=RESUMED_ONLY)
    out: Path | None = None
    # A call that needs approval: "reject" declines it with a reason the model reads and goes
    # on (the task set is read-only); "approve" lets it run (a task set that changes its
    # fresh workspace); "stop" records the run as interrupted.
    approvals: str = field(default="reject", metadata=LOOP)
    preset: Preset = field(default_factory=lambda: preset(PLAIN))
    resume: Path | None = None  # a run file (or its .partial) whose finished tasks are kept
    # Where a task set's databases are: None for SQLite (built by the eval), or a
    # postgresql:// URL (make serve-postgres prints one).
    db: str | None = field(default=None, metadata=RESUMED_ONLY)
    # How each task is solved: "agent" (the loop, under ``preset``) or a workflow
    # (``evals.solvers``).
    solver: str = field(default="agent", metadata=LOOP)
    # The simulated user of a task that is a conversation (``evals.conversation``): its model
    # (None: the agent's), its server (None: the eval's servers), its temperature (None: the
    # eval's) and a cap on its messages. Its seed is the epoch's.
    user_model: str | None = field(default=None, metadata=CONVERSATION)
    user_base_url: str | None = field(default=None, metadata=RESUMED_ONLY)
    # The environment variable the user's server's key is read from (its name only; None:
    # OPENAI_API_KEY when it is set). Given again on --resume, as the servers are.
    user_api_key_env: str | None = None
    user_temperature: float | None = field(default=None, metadata=CONVERSATION)
    max_user_turns: int | None = field(default=30, metadata=CONVERSATION)
    # A conversation's caps over both its sides, counted as τ²'s orchestrator counts them
    # (``evals.conversation.Rules``); None: none.
    max_steps: int | None = field(default=None, metadata=CONVERSATION)
    max_errors: int | None = field(default=None, metadata=CONVERSATION)
    # How a task run's seed follows from the loop's: "epoch", seed + e - 1 for epoch e (the
    # agent and the user alike); "tau2", τ²'s epoch seeds drawn from it as τ²'s runner draws
    # them (τ² calls an epoch a trial), one seed per task, epoch and side derived from the
    # epoch's (τ² hands one seed to every task and both sides of an epoch: with a local sampler
    # their first draws coincide).
    seeds: str = field(default="epoch", metadata=LOOP)
    # Who answers the user of a conversation: the model, or a scripted agent (``oracle``: the
    # task's gold calls and words; ``idle``: nothing), the ceiling and the floor.
    agent: str = field(default="model", metadata=CONVERSATION)

    def epoch_seed(self, epoch: int) -> int | None:
        seed = self.loop.seed
        return None if seed is None else seed + epoch - 1

    def seed_of(self, task_id: str, epoch: int, side: str = "agent") -> int | None:
        """The seed ``side`` (agent or user) samples with on ``task_id``'s epoch ``epoch``."""
        seed = self.loop.seed
        if seed is None or self.seeds != "tau2":
            return self.epoch_seed(epoch)
        return side_seed(epoch_seeds(seed, epoch)[epoch - 1], task_id, side)

    def loop_record(self) -> dict[str, Any]:
        """What every record of this eval keeps under ``spec.loop``: the loop's flagged fields
        and the eval's own that change what a task run does."""
        own = {f.name: getattr(self, f.name) for f in fields(self) if f.metadata.get("loop")}
        return {**flagged(self.loop), **own}

    def conversation_record(self) -> dict[str, Any]:
        """What the records of a conversation keep under ``spec.conversation``: its simulated
        user's settings and its caps."""
        return {
            f.name: getattr(self, f.name) for f in fields(self) if f.metadata.get("conversation")
        }

    def held(self) -> dict[str, Any]:
        """Every setting a conversation is held under: the loop's and the conversation's."""
        return {**self.loop_record(), **self.conversation_record()}


def epoch_seeds(seed: int, epochs: int) -> list[int]:
    """τ²'s runner's seeds of epochs 1..``epochs`` (its trials: ``random.seed(seed)``, then one
    ``randint(0, 1_000_000)`` an epoch)."""
    draw = random.Random(seed)
    return [draw.randint(0, 1_000_000) for _ in range(epochs)]


def side_seed(epoch_seed: int, task_id: str, side: str) -> int:
    """A seed of one task and side within an epoch, from the epoch's: independent draws."""
    digest = hashlib.sha256(f"{epoch_seed}:{task_id}:{side}".encode()).hexdigest()
    return int(digest[:8], 16) % 2**31


def eval_loop(**values: Any) -> LoopConfig:
    """An eval's loop: ten turns a task unless told otherwise."""
    return LoopConfig(**{"max_turns": 10, **values})


RESUMED = tuple(f.name for f in fields(EvalSettings) if f.metadata.get("resumed"))


def portable(path: Path) -> str:
    """``path`` as a saved eval names it: relative to the working folder (the repository,
    for every committed run) when it lies inside it, so a committed file names no folder of
    the machine that ran it; as given otherwise."""
    resolved = path.resolve()
    here = Path.cwd().resolve()
    return str(resolved.relative_to(here)) if resolved.is_relative_to(here) else str(path)


def settings_file(keep: Path) -> Path:
    return keep / "eval.json"


def resumed_settings(run_file: Path, base_url: str, db: str | None = None) -> EvalSettings:
    """The settings of the eval ``run_file`` (or its ``.partial``) belongs to, to go on with;
    ``db`` where the saved one had a password, which is never saved."""
    out = run_file.with_name(run_file.name.removesuffix(".partial"))
    saved_path = settings_file(task_folder(out))
    try:
        saved = json.loads(saved_path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise EvalError(f"cannot resume {run_file}: {saved_path} is missing or unreadable") from exc
    try:
        if not isinstance(saved, dict):
            raise TypeError(f"a JSON object was expected, not {type(saved).__name__}")
        kept = {k: saved[k] for k in RESUMED if k in saved}  # older evals saved fewer
        kept["tasks"] = Path(kept["tasks"])
        serving = Serving(base_url, model=saved.get("model"), api=saved.get("api", "openai"))
        chosen = saved.get("preset", saved.get("policy"))  # its older name, until v4
        if chosen is None:
            raise KeyError("preset")
        if db is not None:
            kept["db"] = db
        return EvalSettings(
            serving=serving,
            out=out,
            preset=Preset(str(chosen["name"]), dict(chosen["settings"])),
            resume=run_file,
            loop=saved_loop(saved),
            **kept,
        )
    except (KeyError, TypeError, ValueError) as exc:
        what = f"no {exc}" if isinstance(exc, KeyError) else str(exc)
        raise EvalError(
            f"cannot resume {run_file}: {saved_path} is not an eval's settings ({what})"
        ) from exc


def saved_loop(saved: dict[str, Any]) -> LoopConfig:
    """The loop an eval.json kept: under ``loop`` by the loop's field names, or, in one saved
    before the loop was one group, among the eval's own fields under older names."""
    if "loop" in saved:
        values = dict(saved["loop"])
    else:
        values = {OLD_LOOP_KEYS.get(k, k): v for k, v in saved.items()}
    unknown = sorted(set(saved.get("loop", {})) - set(FLAGGED))
    if unknown:
        raise ValueError(f"loop: no field {', '.join(unknown)}")
    return eval_loop(**{k: values[k] for k in FLAGGED if k in values})


def kept_records(settings: EvalSettings, out: Path) -> list[RunRecord]:
    """Finished task runs of the eval being resumed (a not-run record, or one the machinery
    ended, is not finished: it runs again)."""
    if settings.resume is None:
        return []
    partial = out.with_name(out.name + ".partial")
    source = next((p for p in (partial, out) if p.exists()), None)
    if source is None:
        raise EvalError(f"cannot resume: neither {out} nor {partial} exists")
    return [r for r in read_runs(source) if not is_error(r)]


def eval_id(keep: Path, settings: EvalSettings) -> str:
    """The prefix of this eval's run ids, kept with its settings so a resume reuses both."""
    saved = settings_file(keep)
    if settings.resume is not None and saved.exists():
        return str(json.loads(saved.read_text(encoding="utf-8"))["eval_id"])
    eval_id = datetime.now().strftime("%H%M%S")
    keep.mkdir(parents=True, exist_ok=True)
    fields = {k: v for k, v in asdict(settings).items() if k in RESUMED}
    fields.update(model=settings.serving.model, api=settings.serving.api)
    fields["tasks"] = portable(settings.tasks)
    fields["loop"] = flagged(settings.loop)
    if settings.db is not None:
        fields["db"] = public_url(settings.db)  # a password is never written
    fields.update(eval_id=eval_id, preset=settings.preset.record())  # the records' key
    saved.write_text(json.dumps(fields, indent=2) + "\n", encoding="utf-8")
    return eval_id
