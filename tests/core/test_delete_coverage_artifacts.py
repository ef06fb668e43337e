"""A delete's coverage leaves out only splits that hold no row it matches: `artifact_pruning.splits_ruled_out`, the
cascade's artifact stages run over a delete's candidates, on real split files and the artifacts the builder made
of them. For random data in several splits and random predicates (=, IN, AND, OR, and a few other atoms), with each
split's artifacts published, absent, unreadable or altered since registration, no split holding a matching row is
ruled out; and one user's delete does rule out the splits without that user."""

from __future__ import annotations

import tempfile

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strata_core.artifacts import build_artifacts
from strata_core.domain.fields import FieldType
from strata_core.domain.index_config import ArtifactConfig
from strata_core.query.artifact_pruning import ArtifactCandidate, PublishedArtifact, splits_ruled_out
from strata_core.query.predicate import (
    And,
    Compare,
    InList,
    IsNull,
    Or,
    Predicate,
    TextMatch,
    evaluate_row,
    to_nnf,
)
from strata_core.storage import ObjectStore
from tests.helpers import examples

TYPES = {"user_id": FieldType.STRING, "code": FieldType.I64, "host": FieldType.STRING,
         "message": FieldType.STRING}
# user_id has a bloom, code a bitmap, host nothing (only the zone map), message a full-text index.
CONFIG = ArtifactConfig(bloom_columns=[{"column": "user_id"}], bitmap_columns=["code"],
                        full_text_columns=["message"])
USERS = [f"u-{i:02d}" for i in range(16)]
HOSTS = [f"h{i}" for i in range(6)]
WORDS = ["disk", "full", "timeout", "ok"]
PARTITION = "p"
# How a split's artifacts reach the delete: published, no published snapshot, one object unreadable (garbage), one
# object replaced since it was registered (its hash no longer the registered one), or one object gone.
STATES = ("published", "unpublished", "garbage", "altered", "missing")

row = st.fixed_dictionaries({
    "user_id": st.one_of(st.none(), st.sampled_from(USERS)),
    "code": st.one_of(st.none(), st.integers(0, 12)),
    "host": st.one_of(st.none(), st.sampled_from(HOSTS)),
    "message": st.one_of(st.none(), st.lists(st.sampled_from(WORDS), min_size=1, max_size=2).map(" ".join)),
})
# Each split draws its rows from a few users only, as logs of one service's hosts would.
split_rows = st.lists(st.sampled_from(USERS), min_size=1, max_size=3).flatmap(lambda users: st.lists(
    row.map(lambda r: {**r, "user_id": r["user_id"] and users[USERS.index(r["user_id"]) % len(users)]}),
    min_size=1, max_size=120))

atom = st.one_of(
    st.builds(Compare, st.just("user_id"), st.just("="), st.sampled_from(USERS)),
    st.builds(InList, st.just("user_id"), st.lists(st.sampled_from(USERS), min_size=1, max_size=3).map(tuple)),
    st.builds(Compare, st.just("code"), st.sampled_from(["=", "!=", "<"]), st.integers(-1, 13)),
    st.builds(InList, st.just("code"), st.lists(st.integers(0, 12), min_size=1, max_size=3).map(tuple),
              st.booleans()),
    st.builds(Compare, st.just("host"), st.just("="), st.sampled_from(HOSTS)),
    st.builds(Compare, st.just("partition_id"), st.just("="), st.sampled_from([PARTITION, "q"])),
    st.builds(IsNull, st.sampled_from(list(TYPES)), st.booleans()),
    st.builds(TextMatch, st.just("message"), st.lists(st.sampled_from(["disk", "full", "retry"]), min_size=1,
                                                       max_size=2).map(tuple)),
)
predicates = st.recursive(atom, lambda children: st.one_of(
    st.lists(children, min_size=2, max_size=3).map(lambda c: And(tuple(c))),
    st.lists(children, min_size=2, max_size=3).map(lambda c: Or(tuple(c)))), max_leaves=5)


def _split(store: ObjectStore, number: int, rows: list[dict], state: str, sort_by: str) -> ArtifactCandidate:
    """A split file in small row groups (so the row-group probes have several to choose from), sorted like a
    split, with its artifacts written under the store as the indexer would publish them."""
    schema = pa.schema([(name, t.arrow_type) for name, t in TYPES.items()])
    rows = sorted(rows, key=lambda r: (r[sort_by] is None, r[sort_by] or 0))
    uri = store.uri_for(f"t/split-{number}.parquet")
    sink = pa.BufferOutputStream()
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), sink, row_group_size=16)
    store.write_bytes(uri, sink.getvalue().to_pybytes())
    parquet = pq.ParquetFile(store.open_input(uri))
    split_id = f"split-{number}"
    built = build_artifacts(parquet, split_id, CONFIG, TYPES)
    published = []
    for artifact in built.artifacts:
        artifact_uri = store.uri_for(f"t/artifacts/{split_id}/{artifact.artifact_type}.{artifact.column}")
        store.write_bytes(artifact_uri, artifact.data)
        published.append(PublishedArtifact(str(artifact.artifact_type), artifact.column, artifact_uri,
                                           artifact.content_hash))
    if state in ("garbage", "altered", "missing"):
        # Every object spoilt: whichever the predicate needs is unusable.
        other = _other_artifacts(store) if state == "altered" else None
        for item in published:
            if state == "garbage":
                store.write_bytes(item.uri, b"not an artifact")
            elif state == "missing":
                store.delete(item.uri)
            else:
                # A well-formed artifact of the same type and column, of a file holding none of these rows: were
                # it trusted, it would rule out everything.
                [same] = [o for o in other.artifacts if (str(o.artifact_type), o.column) == (
                    item.artifact_type, item.column)]
                store.write_bytes(item.uri, same.data)
    return ArtifactCandidate(split_id, parquet.metadata.num_row_groups,
                             None if state == "unpublished" else published)


def _other_artifacts(store: ObjectStore):
    schema = pa.schema([(name, t.arrow_type) for name, t in TYPES.items()])
    uri = store.uri_for("t/other.parquet")
    sink = pa.BufferOutputStream()
    pq.write_table(pa.Table.from_pylist([{"user_id": "nobody", "code": 99, "host": "zz", "message": "zz"}],
                                        schema=schema), sink)
    store.write_bytes(uri, sink.getvalue().to_pybytes())
    return build_artifacts(pq.ParquetFile(store.open_input(uri)), "other", CONFIG, TYPES)


def _matches(pred: Predicate, rows: list[dict]) -> bool:
    return any(evaluate_row(pred, {**r, "partition_id": PARTITION}) for r in rows)


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(splits=st.lists(st.tuples(split_rows, st.sampled_from(STATES), st.sampled_from(["user_id", "host"])),
                       min_size=1, max_size=4),
       pred=predicates)
def test_no_split_holding_a_matching_row_is_ruled_out(splits, pred):
    nnf = to_nnf(pred)
    with tempfile.TemporaryDirectory() as root:
        store = ObjectStore(f"file://{root}")
        candidates = [_split(store, n, rows, state, sort_by) for n, (rows, state, sort_by) in enumerate(splits)]
        ruled_out = splits_ruled_out(nnf, ("partition_id",), candidates, store)
    for candidate, (rows, state, _) in zip(candidates, splits, strict=True):
        if _matches(pred, rows):
            assert candidate.split_id not in ruled_out, (candidate.split_id, state)
        if state != "published":
            # Evidence that is absent or unusable proves nothing.
            assert candidate.split_id not in ruled_out


def test_one_users_delete_rules_out_exactly_the_splits_without_that_user():
    with tempfile.TemporaryDirectory() as root:
        store = ObjectStore(f"file://{root}")
        # Eight splits, each with three of the users, the rows sorted by host: user_id's min/max spans nearly every
        # user in each split, so only the bloom can tell.
        holding = {n: {USERS[n], USERS[(n + 3) % 8], USERS[15 - n]} for n in range(8)}
        candidates = []
        for n, users in holding.items():
            rows = [{"user_id": sorted(users)[i % 3], "code": i % 5, "host": HOSTS[i % 6], "message": "ok"}
                    for i in range(200)]
            candidates.append(_split(store, n, rows, "published", "host"))
        for user in (USERS[0], USERS[3], USERS[15]):
            expected = {f"split-{n}" for n, users in holding.items() if user not in users}
            ruled = splits_ruled_out(Compare("user_id", "=", user), ("partition_id",), candidates, store)
            assert ruled == expected
        # IN, and an OR with a column no artifact covers (host has only a zone map, whose ranges hold every host):
        # the user's splits and nothing else stay; an OR that anything could satisfy rules nothing out.
        ruled = splits_ruled_out(to_nnf(And((InList("user_id", (USERS[0], USERS[1])), Compare("code", "=", 2)))),
                                 ("partition_id",), candidates, store)
        assert ruled == {f"split-{n}" for n, users in holding.items() if not users & {USERS[0], USERS[1]}}
        assert splits_ruled_out(to_nnf(Or((Compare("user_id", "=", USERS[0]), Compare("host", "=", HOSTS[1])))),
                                ("partition_id",), candidates, store) == set()
        # A split without a published snapshot, or whose artifacts cannot be trusted, is never ruled out.
        unpublished = [ArtifactCandidate(c.split_id, c.num_row_groups, None) for c in candidates]
        assert splits_ruled_out(Compare("user_id", "=", USERS[0]), ("partition_id",), unpublished, store) == set()
        rows = [{"user_id": USERS[1], "code": 1, "host": HOSTS[0], "message": "ok"}] * 40
        for number, state in enumerate(("garbage", "altered", "missing"), start=100):
            spoilt = _split(store, number, rows, state, "host")
            assert splits_ruled_out(Compare("user_id", "=", USERS[0]), ("partition_id",), [spoilt], store) == set()
        sound = _split(store, 200, rows, "published", "host")
        assert splits_ruled_out(Compare("user_id", "=", USERS[0]), ("partition_id",), [sound], store) == {"split-200"}
        # Past its time budget, a split not examined yet stays covered.
        assert splits_ruled_out(Compare("user_id", "=", USERS[0]), ("partition_id",), [sound], store,
                                budget_secs=0) == set()
