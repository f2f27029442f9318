"""The stage registry: one declaration per stage drives the stage order, the Prefect flows, the CLI's choices,
`--from/--to/--only`, the rule that skips a stage whose inputs did not change, and what the stage is handed.

Adding a stage is one `StageSpec` in STAGES, in pipeline order, and one module whose `run(ctx) -> Outcome`
(clients/stage.py) does the work; the runner (flows/stage_runner.py) does the rest. The entry point is a module
path, imported only when the stage runs, so that this module stays free of prefect and of every stage's
libraries: the CLI's inspection commands read it without loading the engine.

`reads` names what a stage's output is computed from: earlier stages (by name), "archive" (archive.db as
ingest left it), "exports" (the export files given to the run) or "wordnet". `settings_sections` names the
settings sections it reads: its context holds those only (any other fails on first use), and both are what the
input fingerprint is built from (flows/fingerprint.py), so a stage cannot read a setting that is not in it.
`reads` must be complete too: a stage that reads something not listed there would be skipped when that thing
changed.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass

from contracts.errors import ConfigError

EXTERNAL_INPUTS = ("archive", "exports", "wordnet")  # wordnet: the database the cues stage reads


@dataclass(frozen=True, slots=True)
class StageSpec:
    """One stage: its name, where its `run(ctx: StageContext) -> Outcome` lives (clients/stage.py), what it reads."""

    name: str
    entry: str  # "package.module": the module's `run` is the stage's entry point
    reads: tuple[str, ...]
    settings_sections: tuple[str, ...]  # the Settings sections it reads: its context holds these only
    description: str
    progress: str | None = None  # the unit of ctx.progress's bars ("bytes", "items"); None: ctx.progress is None
    exports: bool = False  # ctx holds the run's export files (`exports`, `force_format`)
    batches: bool = False  # ctx.map_batches may be set (clients.batches): its heavy batches may run on Dask
    # ... and, on a local run, on a pool of runner.local_workers processes (clients.process_batches): for stages
    # whose batches are CPU-bound and cheap to ship (not cluster's: its jobs carry the fitted model)
    local_pool: bool = False
    # run in a process of its own on a local run (runner.stage_processes, flows/stage_process.py) when the run is
    # large (flows/stage_size.py; the module's `large_run(ctx, history)` guesses): a stage whose working set
    # outlives it in the process (numba's kernels, a fragmented heap) and would lie under the next ones
    own_process: bool = False
    # inputs in `reads` that the stage itself changes (ingest: the archive): their state is taken again when the
    # stage finishes, so that the fingerprint it is recorded with names what it left, and an unchanged re-run skips
    writes: tuple[str, ...] = ()


STAGES: tuple[StageSpec, ...] = (
    StageSpec(
        "ingest",
        "ingest.stage",
        reads=("exports", "archive"),
        settings_sections=("ingest",),
        description="Export files in, archive.db rows out.",
        progress="bytes",
        exports=True,
        writes=("archive",),
    ),
    StageSpec(
        "segment",
        "extract.stage_segment",
        reads=("archive",),
        settings_sections=("segment",),
        description="Active paths in archive.db -> segments in staging.db.",
    ),
    StageSpec(
        "embed",
        "cluster.stage_embed",
        reads=("archive", "segment"),
        settings_sections=("embed",),
        description="Segments' messages and segments -> vectors cached in staging.db.",
        progress="items",
        batches=True,
        local_pool=True,
    ),
    StageSpec(
        "extract",
        "extract.stage_extract",
        reads=("archive", "segment"),
        settings_sections=("extract",),
        description="Segments -> ConceptHypothesis objects through the semantic mapper.",
        batches=True,
        local_pool=True,
    ),
    StageSpec(
        "concepts",
        "extract.stage_concepts",
        reads=("archive", "extract"),
        settings_sections=("concepts", "embed"),  # the embed section: similarity="embedding" embeds names
        description="Hypotheses -> the concept store: create / attach / refine / reject.",
        own_process=True,
    ),
    StageSpec(
        "garden",
        "garden.stage",
        reads=("archive", "extract", "concepts"),
        settings_sections=("garden", "concepts"),  # concepts: the thresholds the garden's merges keep
        description="Facts -> validity over time; stale concepts archived per source; merged concepts' links moved.",
    ),
    StageSpec(
        "embed_concepts",
        "cluster.stage_embed_concepts",
        reads=("concepts", "garden"),
        settings_sections=("embed",),
        description="Concepts -> vectors cached in staging.db (the embed stage's model and cache).",
        progress="items",
    ),
    StageSpec(
        "cluster",
        "cluster.stage",
        reads=("segment", "embed", "concepts", "embed_concepts"),
        settings_sections=("cluster", "embed", "extract"),  # extract.llm names the topics
        description="Segment vectors -> topics and weighted BELONGS_TO links for segments and concepts.",
        progress="items",
        batches=True,
        own_process=True,
    ),
    StageSpec(
        "cues",
        "memory.stage",
        reads=("archive", "segment", "concepts", "garden", "cluster", "wordnet"),
        settings_sections=("memory", "embed"),  # memory: the build settings; recall's are in no stage
        description="Messages, concepts and topics -> the Cue-Tag-Content graph (cues, tags, weighted edges).",
        progress="items",
        own_process=True,
    ),
    StageSpec(
        "load",
        "load.stage",
        reads=("archive", "segment", "concepts", "garden", "cluster", "cues"),
        settings_sections=("load",),
        description="archive.db and staging.db -> the graph over Bolt.",
        progress="items",
    ),
)

STAGE_ORDER: tuple[str, ...] = tuple(spec.name for spec in STAGES)
"""The stages, in pipeline order."""

_BY_NAME = {spec.name: spec for spec in STAGES}


def spec(name: str) -> StageSpec:
    """The declaration of stage `name`; ConfigError (exit 2) for an unknown one."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ConfigError(f"unknown stage {name!r}; stages are: {', '.join(STAGE_ORDER)}") from None


def check_registry() -> None:
    """Every stage reads only external inputs or stages declared before it: the order is a valid one."""
    seen: set[str] = set()
    for stage in STAGES:
        unknown = [r for r in stage.reads if r not in seen and r not in EXTERNAL_INPUTS]
        if unknown:
            raise ConfigError(f"stage {stage.name!r} reads {unknown}, which no earlier stage writes")
        seen.add(stage.name)


# The packages pyproject.toml's [tool.setuptools] packages lists that hold stages: an installed `chatmem` imports
# modules inside these only (an editable install maps the listed packages, not the repository's root).
STAGE_PACKAGES = ("ingest", "extract", "cluster", "load", "garden", "memory")


def check_entries(stages: Sequence[str]) -> None:
    """Each selected stage's entry module can be imported (found, not imported: that waits for the stage), so that
    a wrong entry is one line before Prefect starts, not a traceback after; ConfigError (exit 2)."""
    for name in stages:
        entry = _BY_NAME[name].entry if name in _BY_NAME else None
        if entry is None:
            continue
        try:
            found = importlib.util.find_spec(entry) is not None
        except (ImportError, ValueError):  # a parent package that does not exist
            found = False
        if not found:
            package = entry.split(".")[0]
            where = (
                f"{package!r} is not one of the stage packages ({', '.join(STAGE_PACKAGES)})"
                if package not in STAGE_PACKAGES
                else f"there is no {entry.replace('.', '/')}.py"
            )
            raise ConfigError(
                f"stage {name!r}: its entry {entry!r} (flows/registry.py) cannot be imported: {where}; put the module"
                f" inside a stage package and name it there, e.g. 'extract.stage_{name}' for extract/stage_{name}.py"
                " (docs/architecture.md, Adding a stage)"
            )


def select_stages(from_: str | None = None, to: str | None = None, only: str | None = None) -> list[str]:
    """The slice of STAGE_ORDER that --from/--to/--only select; ConfigError (exit 2) if it makes no sense."""
    names = list(STAGE_ORDER)
    for option, value in (("--from", from_), ("--to", to), ("--only", only)):
        if value is not None and value not in names:
            raise ConfigError(f"{option} {value!r}: unknown stage; stages are: {', '.join(names)}")
    if only is not None:
        if from_ is not None or to is not None:
            raise ConfigError("--only cannot be combined with --from or --to")
        return [only]
    start = names.index(from_) if from_ else 0
    end = names.index(to) if to else len(names) - 1
    if start > end:
        raise ConfigError(f"--from {from_} comes after --to {to} in the pipeline ({', '.join(names)})")
    return names[start : end + 1]


def check_stages(stages: Sequence[str]) -> list[str]:
    """The given stages in pipeline order; ConfigError (exit 2) for an unknown one or none at all."""
    unknown = [s for s in stages if s not in _BY_NAME]
    if unknown or not stages:
        what = f"unknown stage(s) {', '.join(map(repr, unknown))}" if unknown else "no stage selected"
        raise ConfigError(f"{what}; stages are: {', '.join(STAGE_ORDER)}")
    return [s for s in STAGE_ORDER if s in stages]
