"""build_artifacts on a split written by encode_split: the expected artifacts, skips, and correct answers."""

from __future__ import annotations

import io

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from strata_core.artifacts import (
    ArtifactFormatError,
    ArtifactType,
    BitmapArtifact,
    BloomArtifact,
    FullTextArtifact,
    ZoneMap,
    build_artifacts,
    encode_artifact,
    load_artifact,
    open_split_file,
    parse_artifact_key,
    tokenize,
)
from strata_core.artifacts.build import few_valued_string_columns
from strata_core.domain.fields import FieldType
from strata_core.domain.index_config import ArtifactConfig, ParquetConfig
from strata_core.domain.split import SplitMetadata
from strata_core.splitfile.writer import encode_split

SPLIT_ID = "01JSPLIT0000000000000000AA"
ROWS = 6_000
FIELD_TYPES = {
    "metric_name": FieldType.STRING,
    "service": FieldType.STRING,
    "host": FieldType.STRING,
    "trace_id": FieldType.STRING,
    "timestamp_secs": FieldType.I64,
    "value": FieldType.F64,
    "tags": FieldType.STRING_LIST,
    "message": FieldType.STRING,
    "declared_only": FieldType.STRING,
}


def split_table() -> pa.Table:
    rng = np.random.default_rng(42)
    host = rng.integers(0, 300, ROWS)
    table = pa.table(
        {
            "metric_name": [f"metric.{i}" for i in rng.integers(0, 20, ROWS)],
            "service": [f"svc-{h % 7}" for h in host],
            "host": [f"host-{h:04d}" if h % 50 else None for h in host],
            "trace_id": [f"{x:016x}" for x in rng.integers(0, 1 << 62, ROWS)],
            "timestamp_secs": 1_767_225_600 + rng.integers(0, 900, ROWS),
            "value": rng.normal(size=ROWS),
            "tags": [[f"t{i % 3}", "all"] if i % 5 else None for i in range(ROWS)],
            "message": [f"request {i % 97} took {i % 13} ms" for i in range(ROWS)],
        }
    )
    return table.sort_by([("metric_name", "ascending"), ("service", "ascending"), ("host", "ascending")])


def split_bytes(table: pa.Table) -> bytes:
    metadata = SplitMetadata(
        split_id=SPLIT_ID, index_uid="idx:1", source_id="src", partition_id="p", doc_mapping_uid="d",
        sort_schema="metric_name,service,host,timestamp_secs@v1", window_start=1_767_225_600,
        window_duration_secs=900, time_range_start=None, time_range_end=None, num_rows=table.num_rows,
    )
    data, _ = encode_split(table, metadata, ParquetConfig(row_group_size=1024))
    return data


CONFIG = ArtifactConfig(
    bloom_columns=[{"column": "host"}, {"column": "trace_id", "false_positive_rate": 0.05}, {"column": "missing"}],
    bitmap_columns=["service", "metric_name", "trace_id", "declared_only"],
    bitmap_max_distinct_values=50,
    full_text_columns=["message", "value"],
)


@pytest.fixture(scope="module")
def table() -> pa.Table:
    return split_table()


@pytest.fixture(scope="module")
def data(table: pa.Table) -> bytes:
    return split_bytes(table)


@pytest.fixture(scope="module")
def built(data: bytes):
    return build_artifacts(pq.ParquetFile(io.BytesIO(data)), SPLIT_ID, CONFIG, FIELD_TYPES)


def test_the_configured_artifacts_and_what_was_skipped(built) -> None:
    assert [(a.artifact_type, a.column) for a in built.artifacts] == [
        (ArtifactType.ZONE_MAP, ""),
        (ArtifactType.BLOOM, "host"),
        (ArtifactType.BLOOM, "trace_id"),
        (ArtifactType.BITMAP, "service"),
        (ArtifactType.BITMAP, "metric_name"),
        (ArtifactType.FULL_TEXT, ""),
    ]
    assert {(s["artifact_type"], s["column"], s["reason"]) for s in built.skipped} == {
        ("bloom", "missing", "column_absent"),
        ("bitmap", "declared_only", "column_absent"),
        ("bitmap", "trace_id", "too_many_distinct_values"),
        ("full_text", "value", "unsupported_type"),
    }
    assert all(s["message"] for s in built.skipped)
    for artifact in built.artifacts:
        header, _ = load_artifact(artifact.data)
        assert (header.split_id, header.artifact_type, header.column) == (SPLIT_ID, artifact.artifact_type,
                                                                          artifact.column)
        assert header.content_hash == artifact.content_hash and artifact.size_bytes == len(artifact.data)
        assert parse_artifact_key(artifact.key(SPLIT_ID)).artifact_type == artifact.artifact_type


def loaded(built, artifact_type: ArtifactType, column: str = ""):
    [artifact] = [a for a in built.artifacts if (a.artifact_type, a.column) == (artifact_type, column)]
    return load_artifact(artifact.data)[1]


def row_groups_where(table: pa.Table, mask: pa.ChunkedArray, size: int = 1024) -> set[int]:
    flags = mask.fill_null(False).to_numpy(zero_copy_only=False)
    return {i // size for i in np.flatnonzero(flags)}


def test_answers_match_the_data(built, table: pa.Table) -> None:
    zone_map = loaded(built, ArtifactType.ZONE_MAP)
    assert isinstance(zone_map, ZoneMap)
    assert set(zone_map.column_types) == {"metric_name", "service", "host", "trace_id", "timestamp_secs", "value",
                                          "message"}  # the default: every column but the list
    assert sum(g.num_rows for g in zone_map.row_groups) == ROWS
    first = table.slice(0, 1024)
    assert zone_map.row_groups[0].columns["host"].null_count == first["host"].null_count
    assert zone_map.row_groups[0].columns["timestamp_secs"].max == pc.max(first["timestamp_secs"]).as_py()

    hosts = loaded(built, ArtifactType.BLOOM, "host")
    assert isinstance(hosts, BloomArtifact)
    for host in ("host-0001", "host-0299"):
        assert hosts.row_groups_maybe_containing([host]) >= row_groups_where(table, pc.equal(table["host"], host))
    trace = table["trace_id"][4321].as_py()
    assert 4321 // 1024 in loaded(built, ArtifactType.BLOOM, "trace_id").row_groups_maybe_containing([trace])

    services = loaded(built, ArtifactType.BITMAP, "service")
    assert isinstance(services, BitmapArtifact)
    assert services.row_groups_containing(["svc-3"]) == row_groups_where(table, pc.equal(table["service"], "svc-3"))
    assert len(services.rows_matching(["svc-3"])) == pc.sum(pc.equal(table["service"], "svc-3")).as_py()

    text = loaded(built, ArtifactType.FULL_TEXT)
    assert isinstance(text, FullTextArtifact)
    terms = ["Request", "5", "took", "0"]
    wanted = {t for term in terms for t in tokenize(term)}
    holds = pa.chunked_array([pa.array([wanted <= set(tokenize(m)) for m in table["message"].to_pylist()])])
    assert text.row_groups_matching("message", terms) == row_groups_where(table, holds)


def test_bytes_and_a_dictionary_reading_file_give_the_same_artifacts(built, data: bytes) -> None:
    assert few_valued_string_columns(pq.read_metadata(io.BytesIO(data)), pq.read_schema(io.BytesIO(data))) == [
        "metric_name", "service", "host"
    ]
    again = build_artifacts(data, SPLIT_ID, CONFIG, FIELD_TYPES)
    assert again.skipped == built.skipped
    for first, second in zip(built.artifacts, again.artifacts, strict=True):
        if first.artifact_type is ArtifactType.FULL_TEXT:  # tantivy names segments randomly
            assert loaded(again, ArtifactType.FULL_TEXT) == loaded(built, ArtifactType.FULL_TEXT)
        else:
            assert first.data == second.data, first.artifact_type
    assert open_split_file(data).schema_arrow.field("service").type == pa.dictionary(pa.int32(), pa.string())


def test_declared_type_mismatch_and_explicit_zone_map_columns(data: bytes) -> None:
    config = ArtifactConfig(zone_map_columns=["value", "tags", "absent"], bloom_columns=[{"column": "value"}])
    result = build_artifacts(data, SPLIT_ID, config, {**FIELD_TYPES, "value": FieldType.I64})
    assert {(s["artifact_type"], s["column"], s["reason"]) for s in result.skipped} == {
        ("zone_map", "value", "type_mismatch"),
        ("zone_map", "tags", "unsupported_type"),
        ("zone_map", "absent", "column_absent"),
        ("bloom", "value", "type_mismatch"),
    }
    [zone] = result.artifacts
    assert loaded(result, ArtifactType.ZONE_MAP).column_types == {}
    assert zone.artifact_type is ArtifactType.ZONE_MAP


def test_empty_file() -> None:
    empty = split_table().slice(0, 0)
    result = build_artifacts(split_bytes(empty), SPLIT_ID, CONFIG, FIELD_TYPES)
    assert [a.artifact_type for a in result.artifacts] == [ArtifactType.ZONE_MAP, ArtifactType.BLOOM,
                                                            ArtifactType.BLOOM, ArtifactType.BITMAP,
                                                            ArtifactType.BITMAP, ArtifactType.BITMAP,
                                                            ArtifactType.FULL_TEXT]
    assert not loaded(result, ArtifactType.BLOOM, "host").might_contain(["host-0001"])


def test_a_payload_for_another_column_is_refused(built) -> None:
    hosts = [a for a in built.artifacts if a.column == "host"][0]
    _, payload = load_artifact(hosts.data)
    forged = encode_artifact(SPLIT_ID, ArtifactType.BLOOM, "service", payload.to_payload())
    with pytest.raises(ArtifactFormatError, match="column mismatch"):
        load_artifact(forged)


def test_a_failing_build_leaves_no_threads_or_temporary_directories(data: bytes, monkeypatch, tmp_path) -> None:
    import tempfile
    import threading

    from strata_core.artifacts import bitmap as bitmap_module
    from strata_core.artifacts import bloom as bloom_module

    monkeypatch.setattr(bloom_module, "_FILE_INSERT_BATCH", 100)  # background insertion starts early
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    calls = []

    def failing_add(self, values) -> None:
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("boom")

    monkeypatch.setattr(bitmap_module.BitmapBuilder, "add_row_group", failing_add)
    before = set(threading.enumerate())
    with pytest.raises(RuntimeError, match="boom"):
        build_artifacts(data, SPLIT_ID, CONFIG, FIELD_TYPES)
    assert set(threading.enumerate()) <= before
    assert list(tmp_path.iterdir()) == []
