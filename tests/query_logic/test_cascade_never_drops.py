"""The pruning cascade query-api plans with (`run_cascade` over `CASCADE`, as `build_plan` calls it), fed by a
candidate source that holds real split files and the real artifacts the artifact builder made of them: for random
data and random predicates, the rows of the kept row groups that match are exactly the rows of the whole file
that match (pruning never drops a matching row), and something does get pruned."""

from __future__ import annotations

import asyncio
import io
import tempfile

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strata_core.artifacts import build_artifacts
from strata_core.domain.column_stats import compute_column_stats
from strata_core.domain.fields import FieldType
from strata_core.domain.index_config import ArtifactConfig, ParquetConfig
from strata_core.domain.split import SplitMetadata
from strata_core.query.artifact_pruning import PublishedArtifact
from strata_core.query.predicate import (
    And,
    Compare,
    InList,
    IsNull,
    Like,
    Or,
    Predicate,
    TextMatch,
    columns_of,
    evaluate_row,
    to_nnf,
)
from strata_core.query.time_range import TimeRanges
from strata_core.splitfile.writer import encode_split, row_group_spans
from strata_core.storage import ObjectStore
from strata_query.planning.caches import ArtifactCache, FooterCache
from strata_query.planning.candidates import CandidateFile, CandidateQuery
from strata_query.planning.cascade import CascadeContext, CascadeResult, run_cascade
from strata_query.planning.stages import CASCADE
from tests.helpers import examples
from tests.query_logic.in_memory_candidates import InMemoryCandidates

TYPES = {"host": FieldType.STRING, "code": FieldType.I64, "value": FieldType.F64, "message": FieldType.STRING}
CONFIG = ArtifactConfig(bloom_columns=[{"column": "host"}], bitmap_columns=["code"], full_text_columns=["message"])
HOSTS = [f"h{i}" for i in range(12)]
WORDS = ["disk", "full", "timeout", "ok", "Retry", "x1"]

rows_strategy = st.lists(st.fixed_dictionaries({
    "host": st.one_of(st.none(), st.sampled_from(HOSTS)),
    "code": st.one_of(st.none(), st.integers(0, 20)),
    "value": st.one_of(st.none(), st.floats(-5, 5), st.just(float("nan"))),
    "message": st.one_of(st.none(), st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join)),
}), min_size=1, max_size=300)

atom = st.one_of(
    st.builds(Compare, st.just("host"), st.sampled_from(["=", "!=", "<", ">="]), st.sampled_from(HOSTS)),
    st.builds(Compare, st.just("code"), st.sampled_from(["=", "<", ">", "<=", "!="]), st.integers(-1, 21)),
    st.builds(Compare, st.just("value"), st.sampled_from(["<", ">", "="]), st.floats(-6, 6)),
    st.builds(InList, st.just("host"), st.lists(st.sampled_from(HOSTS), min_size=1, max_size=3).map(tuple),
              st.booleans()),
    st.builds(InList, st.just("code"), st.lists(st.integers(0, 20), min_size=1, max_size=3).map(tuple)),
    st.builds(IsNull, st.sampled_from(list(TYPES)), st.booleans()),
    st.builds(Like, st.just("host"), st.sampled_from(["h1%", "h%", "%1"]), st.booleans()),
    st.builds(TextMatch, st.just("message"), st.lists(st.sampled_from(["disk", "full", "retry", "x1"]),
                                                       min_size=1, max_size=2).map(tuple)),
)
predicates = st.recursive(atom, lambda children: st.one_of(
    st.lists(children, min_size=2, max_size=3).map(lambda c: And(tuple(c))),
    st.lists(children, min_size=2, max_size=3).map(lambda c: Or(tuple(c)))), max_leaves=5)


def _cascade(store: ObjectStore, pred: Predicate, candidates: list[CandidateFile]) -> CascadeResult:
    """What the planner does once the index and the time range are known: read the candidates from a source, then
    run the cascade's stages over them."""
    stats_columns = frozenset(columns_of(pred)) & frozenset(TYPES)
    read = asyncio.run(InMemoryCandidates(candidates).read(CandidateQuery(
        tenant=None, ranges=TimeRanges.everything(), predicate=pred, window_duration_secs=900, split_columns={},
        stats_columns=stats_columns, prune_columns=stats_columns, limit=1000)))
    return run_cascade(CASCADE, CascadeContext(read, pred, {}, frozenset(TYPES), ArtifactCache(store),
                                               FooterCache(store)))


def _split(store: ObjectStore, rows: list[dict], sort: bool) -> CandidateFile:
    schema = pa.schema([(name, t.arrow_type) for name, t in TYPES.items()])
    if sort:
        rows = sorted(rows, key=lambda r: (r["host"] is None, r["host"] or ""))
    table = pa.Table.from_pylist(rows, schema=schema)
    metadata = SplitMetadata(
        split_id="01JTESTSPLIT0000000000000", index_uid="t:1", source_id="s", partition_id="p",
        doc_mapping_uid="d", sort_schema="host@v1", window_start=0, window_duration_secs=900, time_range_start=None,
        time_range_end=None, num_rows=table.num_rows, uri=store.uri_for("t/split.parquet"),
        column_stats=compute_column_stats(table, frozenset()), root_split_ids=[])
    data, footer = encode_split(table, metadata, ParquetConfig(row_group_size=1024))
    # Tiny row groups, so the row-group stages have several to choose from.

    import pyarrow.parquet as pq
    sink = io.BytesIO()
    pq.write_table(pq.read_table(io.BytesIO(data)), sink, row_group_size=32, compression="zstd")
    data = sink.getvalue()
    footer = pq.ParquetFile(io.BytesIO(data)).metadata
    store.write_bytes(metadata.uri, data)
    metadata.size_bytes = len(data)
    metadata.row_groups = row_group_spans(footer)
    built = build_artifacts(pq.ParquetFile(store.open_input(metadata.uri)), metadata.split_id, CONFIG, TYPES)
    published = []
    for artifact in built.artifacts:
        uri = store.uri_for(f"t/artifacts/{artifact.artifact_type}.{artifact.column}")
        store.write_bytes(uri, artifact.data)
        published.append(PublishedArtifact(str(artifact.artifact_type), artifact.column, uri, artifact.content_hash))
    return CandidateFile(metadata, published)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=rows_strategy, pred=predicates, sort=st.booleans(), with_artifacts=st.booleans())
def test_the_cascade_never_drops_a_matching_row(rows, pred, sort, with_artifacts):
    with tempfile.TemporaryDirectory() as root:
        store = ObjectStore(f"file://{root}")
        candidate = _split(store, rows, sort)
        if not with_artifacts:
            candidate.artifacts = None
        nnf = to_nnf(pred)
        result = _cascade(store, nnf, [candidate])
        parquet = pq.ParquetFile(store.open_input(candidate.split.uri))
        all_rows = parquet.read().to_pylist()
        expected = [r for r in all_rows if evaluate_row(pred, r)]
        kept = [r for part in result.files for g in part.row_groups for r in parquet.read_row_group(g).to_pylist()]
        # repr: NaN != NaN, but the same NaN row prints the same.
        assert repr([r for r in kept if evaluate_row(pred, r)]) == repr(expected)


def test_the_cascade_prunes_row_groups_with_each_kind_of_artifact():
    rows = [{"host": HOSTS[i // 50], "code": i // 50, "value": float(i), "message": f"word{i // 50} ok"}
            for i in range(600)]
    with tempfile.TemporaryDirectory() as root:
        store = ObjectStore(f"file://{root}")
        candidate = _split(store, rows, sort=True)
        groups = len(candidate.split.row_groups)
        for pred, stage in [(Compare("host", "=", "h3"), "zone_maps"), (InList("code", (4,)), "zone_maps"),
                            (TextMatch("message", ("word7",)), "full_text")]:
            result = _cascade(store, to_nnf(pred), [candidate])
            counts = {s.stage: s for s in result.stages}
            assert counts[stage].row_groups_after < groups
            assert 0 < sum(len(p.row_groups) for p in result.files) < groups
