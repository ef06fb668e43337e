"""The lineage of a merge's or a rewrite's outputs, from its inputs: the one rule behind what a worker writes into
the outputs' footers (`executor.merge_spec`) and what the publish records in the catalog (`scheduler.py`), which
computes it again from the catalog's own rows rather than trust the worker's."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol


class Ancestor(Protocol):
    """An input split as lineage reads it (a catalog row, or an assignment's input)."""

    @property
    def split_id(self) -> str: ...
    @property
    def num_merge_ops(self) -> int: ...
    @property
    def generation(self) -> int: ...
    @property
    def root_split_ids(self) -> list[str]: ...


@dataclass(frozen=True, slots=True)
class Lineage:
    num_merge_ops: int
    generation: int
    # The ingested splits the outputs descend from, sorted.
    root_split_ids: list[str]


def lineage_of(inputs: Iterable[Ancestor], *, rewrite: bool) -> Lineage:
    """An ingested split is its own root. A rewrite replaces its split at the same level: it merges nothing, so
    it adds no merge operation and no generation."""
    inputs = list(inputs)
    step = 0 if rewrite else 1
    return Lineage(num_merge_ops=max((s.num_merge_ops for s in inputs), default=0) + step,
                   generation=max((s.generation for s in inputs), default=0) + step,
                   root_split_ids=sorted({r for s in inputs for r in (s.root_split_ids or [s.split_id])}))
