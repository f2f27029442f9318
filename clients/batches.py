"""How a stage hands its heavy, independent work out in batches, without knowing who runs them.

    MapBatches (protocol)   map_batches(job, batches) -> the job's result for each batch, in batch order
    ├── map_in_process      the default: one batch after another, here
    └── flows/batch_runner  each batch a Prefect task on the configured task runner (a Dask cluster)

A stage cuts its work into batches itself (`split`, the same cut whatever runs them) and writes the results
itself, in batch order: which runner ran a batch, and when it finished, changes nothing that is written. So a
run on a Dask cluster writes what a run in one process writes, as long as a job's result depends only on its
batch (every job here is such a pure function: embed texts, extract segments, place points in a fitted model).

A job is a picklable callable (it travels to the workers). It never carries a secret: a job that needs one
(an endpoint's API key) drops its settings section when pickled, keeping only the public dump, and the worker
reads the section again from its own environment (`unship`): the same CHATMEM_* variables
the stage process reads. Task parameters, and Prefect's database, never see a secret.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel

from contracts.errors import ConfigError
from contracts.settings import Settings, section_dump

T = TypeVar("T")
R = TypeVar("R")
S = TypeVar("S", bound=BaseModel)


class MapBatches(Protocol):
    def __call__(self, job: Callable[[T], R], batches: Sequence[T]) -> Iterator[R]: ...


def map_in_process(job: Callable[[T], R], batches: Sequence[T]) -> Iterator[R]:
    """Run each batch here, one after another; results come as they are computed, in batch order."""
    for batch in batches:
        yield job(batch)


def ahead_of(items: Iterator[T], depth: int) -> Iterator[T]:
    """`items` in order, each one taken from `items` `depth` items before it is handed out (0: when it is).

    A stage whose items start work elsewhere as they are taken (batches submitted to workers) keeps the
    workers busy with the next ones while it writes the current one; its writes stay in order."""
    window: deque[T] = deque()
    for item in items:
        window.append(item)
        if len(window) > depth:
            yield window.popleft()
    yield from window


def split(items: Sequence[T], size: int) -> list[Sequence[T]]:
    """`items` cut into consecutive batches of `size` (the last one shorter)."""
    if size < 1:
        raise ValueError(f"batch size must be at least 1, got {size}")
    return [items[start : start + size] for start in range(0, len(items), size)]


def shippable(section: BaseModel) -> tuple[dict[str, Any], bool]:
    """What a job keeps of a settings section when it is pickled: its public dump, and whether that dump lost
    a secret (then the worker must read the section from its own environment: `unship`)."""
    public = section_dump(section)
    return public, public != section.model_dump(mode="json")


def unship(
    cls: type[S], public: dict[str, Any], from_env: bool, pick: Callable[[Settings], BaseModel | None], what: str
) -> S:
    """On a worker: the settings section a job was built with. Without secrets it is rebuilt from the public
    dump; with them it is read again from the worker's own CHATMEM_* environment, and refused (ConfigError)
    when that differs from the run's (another model or endpoint would compute something else)."""
    if not from_env:
        return cls.model_validate(public)
    section = pick(Settings())
    if not isinstance(section, cls) or section_dump(section) != public:
        raise ConfigError(
            f"{what}: this Dask worker's CHATMEM_* environment does not match the run's settings; give every"
            " worker the same CHATMEM_* variables (secrets included) as the process that starts the run"
        )
    return section
