"""Index artifacts of split files: formats, builders and readers (docs/architecture.md, "Index artifacts").

Every artifact object is an envelope (envelope.py) around one payload: a zone map of the file's row groups, a bloom
filter or a bitmap index of one column, or a full-text index of the configured text columns. `build_artifacts`
makes all of them for one Parquet file in one pass; `load_artifact` checks and parses any of them; naming.py gives
their deterministic object names.
"""

from strata_core.artifacts.bitmap import BitmapArtifact, TooManyDistinctValues
from strata_core.artifacts.bloom import BloomArtifact, SplitBlockBloomFilter
from strata_core.artifacts.build import BuildResult, BuiltArtifact, build_artifacts, open_split_file
from strata_core.artifacts.envelope import (
    FORMAT_VERSIONS,
    ArtifactFormatError,
    ArtifactHeader,
    ArtifactType,
    decode_artifact,
    encode_artifact,
    read_header,
)
from strata_core.artifacts.full_text import FullTextArtifact, tokenize
from strata_core.artifacts.naming import ArtifactKey, artifact_key, manifest_key, parse_artifact_key
from strata_core.artifacts.readers import Artifact, load_artifact
from strata_core.artifacts.zone_map import ColumnZone, RowGroupZones, ZoneMap

__all__ = [
    "FORMAT_VERSIONS",
    "Artifact",
    "ArtifactFormatError",
    "ArtifactHeader",
    "ArtifactKey",
    "ArtifactType",
    "BitmapArtifact",
    "BloomArtifact",
    "BuildResult",
    "BuiltArtifact",
    "ColumnZone",
    "FullTextArtifact",
    "RowGroupZones",
    "SplitBlockBloomFilter",
    "TooManyDistinctValues",
    "ZoneMap",
    "artifact_key",
    "build_artifacts",
    "decode_artifact",
    "encode_artifact",
    "load_artifact",
    "manifest_key",
    "open_split_file",
    "parse_artifact_key",
    "read_header",
    "tokenize",
]
