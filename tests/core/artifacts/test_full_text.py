"""Full-text artifacts: the tokenization contract, and exactly the row groups whose rows hold all the terms."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strata_core.artifacts import ArtifactType, FullTextArtifact, decode_artifact, encode_artifact, tokenize
from strata_core.artifacts.full_text import MAX_INDEXED_TOKEN_BYTES, FullTextBuilder, text_analyzer
from strata_core.domain.fields import FieldType
from tests.helpers import examples

LONG = "Supercalifragilisticexpialidocious" + "X" * 20  # > 40 characters, one token
CORPUS = [
    [  # row group 0
        "ERROR: disk /dev/sda1 is 99% full!",
        "user=alice action=login status=OK",
        "Connection reset by peer (errno=104)",
    ],
    [  # row group 1
        "error while reading config.yaml",
        f"token {LONG} seen",
        None,
    ],
    [  # row group 2
        "GET /api/v2/items?id=42 HTTP/1.1 200",
        "naïve café: ünïcode splits tokens",
        "user=bob action=logout status=OK",
    ],
    [None, None],  # row group 3: nothing to index
]


@pytest.fixture(scope="module")
def artifact() -> FullTextArtifact:
    builder = FullTextBuilder({"message": FieldType.STRING, "tags": FieldType.STRING_LIST})
    for group in CORPUS:
        tags = [["prod", "eu-west-1"] if text and "user" in text else None for text in group]
        builder.add_row_group({"message": pa.chunked_array([pa.array(group, pa.string())]),
                               "tags": pa.chunked_array([pa.array(tags, pa.list_(pa.string()))])})
    built = builder.finish()
    loaded = FullTextArtifact.from_payload(built.to_payload())
    built.close()
    return loaded


def brute_force(terms: list[str]) -> set[int]:
    wanted = {t for term in terms for t in tokenize(term)}
    return {g for g, group in enumerate(CORPUS) if any(text and wanted <= set(tokenize(text)) for text in group)}


@pytest.mark.parametrize(
    "terms",
    [
        ["error"],
        ["ERROR"],
        ["error", "disk"],
        ["error", "config"],
        ["disk", "config"],  # in different rows: no row holds both
        ["user", "ok"],
        ["alice", "logout"],
        ["99"],
        ["sda1"],
        ["v2", "42"],
        [LONG],
        [LONG.lower()[:40]],  # a prefix is not a token
        ["caf"],
        ["café"],  # tokenizes to "caf"
        ["104"],
        ["missing"],
        ["http", "1"],
    ],
)
def test_exactly_the_row_groups_holding_every_term(artifact: FullTextArtifact, terms: list[str]) -> None:
    assert artifact.row_groups_matching("message", terms) == brute_force(terms)


def test_list_columns_and_unknown_columns(artifact: FullTextArtifact) -> None:
    assert artifact.row_groups_matching("tags", ["eu", "west"]) == {0, 2}
    assert artifact.row_groups_matching("tags", ["prod", "alice"]) == set()
    assert artifact.row_groups_matching("nope", ["x"]) is None


def test_terms_without_tokens_constrain_nothing(artifact: FullTextArtifact) -> None:
    assert artifact.row_groups_matching("message", []) == {0, 1, 2, 3}
    assert artifact.row_groups_matching("message", ["!!!"]) == {0, 1, 2, 3}
    assert artifact.row_groups_matching("message", ["!!!", "bob"]) == {2}


def test_tokens_longer_than_tantivy_indexes_are_not_lost() -> None:
    giant = "a" * (MAX_INDEXED_TOKEN_BYTES + 10)
    builder = FullTextBuilder({"m": FieldType.STRING})
    for group in (["short words"], [f"x {giant} y"], ["b" * MAX_INDEXED_TOKEN_BYTES]):
        builder.add_row_group({"m": pa.chunked_array([pa.array(group)])})
    artifact = FullTextArtifact.from_payload(builder.finish().to_payload())
    assert artifact.row_groups_matching("m", [giant]) == {1}
    assert artifact.row_groups_matching("m", ["x", "y"]) == {1}
    assert artifact.row_groups_matching("m", ["b" * MAX_INDEXED_TOKEN_BYTES]) == {2}
    assert artifact.long_token_row_groups == {"m": [1]}


def test_tokenize_contract() -> None:
    assert tokenize("Hello, WORLD! x_y 123abc café") == ["hello", "world", "x", "y", "123abc", "caf"]
    assert tokenize("") == [] and tokenize("---") == []


@settings(max_examples=examples(200), deadline=None)
@given(st.text(alphabet=st.sampled_from("aZ09 _-.,:/é\u00dfİ\u212a\n\t") | st.characters(codec="utf-8"), max_size=60))
def test_tantivy_tokenizes_like_the_contract(text: str) -> None:
    assert text_analyzer().analyze(text) == tokenize(text)


def test_envelope_round_trip_and_equality(artifact: FullTextArtifact) -> None:
    data = encode_artifact("s", ArtifactType.FULL_TEXT, "", artifact.to_payload())
    loaded = FullTextArtifact.from_payload(decode_artifact(data)[1])
    assert loaded == artifact
    assert loaded.num_segments == 1
    assert loaded.row_groups_matching("message", ["status", "ok"]) == {0, 2}
