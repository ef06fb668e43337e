"""The columns SQL over an index can name: the index's declared fields plus `partition_id`, each split's tenant
(split metadata, one value for the whole file, not a column of the file). Queries and delete predicates resolve
names against the same list."""

from __future__ import annotations

from strata_core.domain.fields import FieldType
from strata_core.domain.index_config import FieldSpec, IndexSettings

PARTITION_COLUMN = "partition_id"


def with_partition_column(settings: IndexSettings) -> IndexSettings:
    """The index schema as SQL sees it: its fields plus `partition_id`."""
    if any(f.name == PARTITION_COLUMN for f in settings.fields):
        return settings
    return settings.model_copy(update={"fields": [*settings.fields,
                                                  FieldSpec(name=PARTITION_COLUMN, type=FieldType.STRING)]})
