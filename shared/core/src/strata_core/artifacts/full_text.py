"""Full-text artifacts: a tantivy index of a file's configured text columns, whose hits map back to row groups.

Documents: one per distinct (row group, column, value). A row group's rows that share a value share a document, so
repetitive logs index each message once per row group, and the index stays exact: a row of column c contains all
the query's tokens exactly when its value does, i.e. when that value's document matches. A document holds the
unsigned field `row_group` (indexed, fast) and the value in the text field `text_<column>` (tokens only, no
positions, not stored). A string_list row is indexed as its elements joined by a newline, which is not a token
character, so its tokens are exactly the union of its elements' tokens.

Tokenization contract, shared with the query side (`tokenize`): a token is a maximal run of ASCII letters and digits
`[A-Za-z0-9]+`, lowercased; nothing is dropped for length or as a stop word. The index uses a tantivy regex
tokenizer with a lowercase filter, which produces the same tokens, with one exception: tantivy drops tokens longer
than 65,530 bytes. So the builder records, per column, the row groups holding such a token, and a query for a
longer token answers with those row groups: never a dropped row.

Payload: an uncompressed tar of the committed index directory (the envelope compresses it) plus `strata.json` with
the columns, the row-group count and the long-token row groups. The writer runs one indexing thread with a heap large
enough that a split's index is normally a single segment, the fastest layout to read. `from_payload` unpacks into a
temporary directory that lives as long as the artifact: removed by `close()`, or when it is garbage collected.
"""

from __future__ import annotations

import io
import json
import re
import shutil
import tarfile
import tempfile
import weakref
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import tantivy

from strata_core.artifacts.envelope import ArtifactFormatError
from strata_core.domain.fields import FieldType

TOKEN = re.compile(r"[A-Za-z0-9]+")
TOKENIZER_NAME = "strata_alnum_lower"
ROW_GROUP_FIELD = "row_group"
# tantivy's MAX_TOKEN_LEN: longer tokens are skipped by its indexer.
MAX_INDEXED_TOKEN_BYTES = 65_530
_LONG_TOKEN = re.compile(rf"[A-Za-z0-9]{{{MAX_INDEXED_TOKEN_BYTES + 1},}}")
_META_NAME = "strata.json"
_WRITER_HEAP_BYTES = 256 * 1024 * 1024
_SKIPPED_FILES = (".tantivy-meta.lock", ".tantivy-writer.lock")
_TEXT_TYPES = (FieldType.STRING, FieldType.STRING_LIST)


def tokenize(text: str) -> list[str]:
    """The tokens of `text` under the full-text contract, in order, with repeats."""
    return [token.lower() for token in TOKEN.findall(text)]


def text_analyzer() -> tantivy.TextAnalyzer:
    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.regex(TOKEN.pattern))
        .filter(tantivy.Filter.lowercase())
        .build()
    )


def _text_field(column: str) -> str:
    return f"text_{column}"


def _schema(columns: list[str]) -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_unsigned_field(ROW_GROUP_FIELD, indexed=True, fast=True)
    for column in columns:
        builder.add_text_field(_text_field(column), tokenizer_name=TOKENIZER_NAME, index_option="basic")
    return builder.build()


@dataclass(eq=False)
class FullTextArtifact:
    columns: list[str]
    num_row_groups: int
    long_token_row_groups: dict[str, list[int]]
    _index: tantivy.Index = field(repr=False)
    _directory: Path = field(repr=False)
    _payload: bytes | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        # The index reads its files from this directory until the artifact is garbage collected.
        self._cleanup = weakref.finalize(self, shutil.rmtree, self._directory, True)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FullTextArtifact):
            return NotImplemented
        return (
            (self.columns, self.num_row_groups, self.long_token_row_groups)
            == (other.columns, other.num_row_groups, other.long_token_row_groups)
            and self.num_docs == other.num_docs
        )

    @property
    def num_docs(self) -> int:
        return self._index.searcher().num_docs

    @property
    def num_segments(self) -> int:
        return self._index.searcher().num_segments

    def close(self) -> None:
        self._cleanup()

    def row_groups_matching(self, column: str, terms: list[str]) -> set[int] | None:
        """Row groups where some row's `column` contains every term as a token; None if the column is not indexed.

        A term is taken by its tokens (so "Foo-Bar" asks for "foo" and "bar"); a term with no token at all constrains
        nothing, and no tokens at all match every row group."""
        if column not in self.columns:
            return None
        tokens = sorted({token for term in terms for token in tokenize(term)})
        if not tokens:
            return set(range(self.num_row_groups))
        if any(len(token) > MAX_INDEXED_TOKEN_BYTES for token in tokens):
            return set(self.long_token_row_groups.get(column, []))
        schema = self._index.schema
        query = tantivy.Query.boolean_query(
            [(tantivy.Occur.Must, tantivy.Query.term_query(schema, _text_field(column), t)) for t in tokens]
        )
        size = max(1, self.num_row_groups)
        result = self._index.searcher().aggregate(
            query, {"groups": {"terms": {"field": ROW_GROUP_FIELD, "size": size, "segment_size": size}}}
        )["groups"]
        if result.get("sum_other_doc_count", 0) or result.get("doc_count_error_upper_bound", 0):
            return set(range(self.num_row_groups))  # an inexact aggregation: keep everything rather than guess
        return {int(bucket["key"]) for bucket in result["buckets"]}

    def to_payload(self) -> bytes:
        if self._payload is None:
            self._payload = _tar_directory(self._directory)
        return self._payload

    @classmethod
    def from_payload(cls, payload: bytes | memoryview) -> FullTextArtifact:
        directory = Path(tempfile.mkdtemp(prefix="strata-full-text-"))
        try:
            with tarfile.open(fileobj=io.BytesIO(bytes(payload)), mode="r:") as archive:
                archive.extractall(directory, filter="data")
            meta = json.loads((directory / _META_NAME).read_text())
            index = tantivy.Index.open(str(directory))
            index.register_tokenizer(TOKENIZER_NAME, text_analyzer())
            columns = [str(c) for c in meta["columns"]]
            long_tokens = {str(c): [int(g) for g in groups] for c, groups in meta["long_token_row_groups"].items()}
            return cls(columns, int(meta["num_row_groups"]), long_tokens, index, directory, bytes(payload))
        except (tarfile.TarError, OSError, ValueError, KeyError, TypeError) as exc:
            shutil.rmtree(directory, ignore_errors=True)
            raise ArtifactFormatError(f"bad full_text payload: {exc}") from None


def _tar_directory(directory: Path) -> bytes:
    sink = io.BytesIO()
    with tarfile.open(fileobj=sink, mode="w:", format=tarfile.PAX_FORMAT) as archive:
        for path in sorted(directory.iterdir()):
            if path.is_file() and path.name not in _SKIPPED_FILES:
                info = archive.gettarinfo(str(path), arcname=path.name)
                info.mtime = 0
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                with path.open("rb") as handle:
                    archive.addfile(info, handle)
    return sink.getvalue()


def _distinct_texts(values: pa.ChunkedArray, field_type: FieldType) -> list[str]:
    if field_type is FieldType.STRING_LIST:
        chunks = []
        for chunk in values.chunks:
            if pa.types.is_dictionary(chunk.type.value_type):
                chunk = chunk.cast(pa.list_(pa.string()))
            chunks.append(pc.binary_join(chunk, "\n"))
        values = pa.chunked_array(chunks, type=pa.string())
    elif pa.types.is_dictionary(values.type):
        values = values.cast(values.type.value_type)
    return [text for text in pc.unique(values).to_pylist() if text is not None]


class FullTextBuilder:
    """Adds each row group's distinct texts to a tantivy index in a temporary directory; `finish` commits it."""

    def __init__(self, column_types: dict[str, FieldType]) -> None:
        unsupported = [name for name, t in column_types.items() if t not in _TEXT_TYPES]
        if unsupported:
            raise ValueError(f"full-text indexes strings and string lists only, not {unsupported}")
        self.column_types = dict(column_types)
        self.columns = list(column_types)
        self._directory = Path(tempfile.mkdtemp(prefix="strata-full-text-build-"))
        try:
            self._index = tantivy.Index(_schema(self.columns), path=str(self._directory))
            self._index.register_tokenizer(TOKENIZER_NAME, text_analyzer())
            self._writer = self._index.writer(heap_size=_WRITER_HEAP_BYTES, num_threads=1)
        except BaseException:
            shutil.rmtree(self._directory, ignore_errors=True)
            raise
        self._num_row_groups = 0
        self._long_tokens: dict[str, list[int]] = {}

    def add_row_group(self, data: dict[str, pa.ChunkedArray]) -> None:
        row_group = self._num_row_groups
        for column, field_type in self.column_types.items():
            text_field = _text_field(column)
            for text in _distinct_texts(data[column], field_type):
                if len(text) > MAX_INDEXED_TOKEN_BYTES and _LONG_TOKEN.search(text):
                    groups = self._long_tokens.setdefault(column, [])
                    if not groups or groups[-1] != row_group:
                        groups.append(row_group)
                document = tantivy.Document()
                document.add_unsigned(ROW_GROUP_FIELD, row_group)
                document.add_text(text_field, text)
                self._writer.add_document(document)
        self._num_row_groups += 1

    def finish(self) -> FullTextArtifact:
        self._writer.commit()
        self._writer.wait_merging_threads()
        meta = {
            "columns": self.columns,
            "num_row_groups": self._num_row_groups,
            "long_token_row_groups": self._long_tokens,
        }
        (self._directory / _META_NAME).write_text(json.dumps(meta))
        self._index.reload()
        return FullTextArtifact(self.columns, self._num_row_groups, self._long_tokens, self._index, self._directory)

    def abandon(self) -> None:
        """Drop the half-built index (when the build fails elsewhere)."""
        shutil.rmtree(self._directory, ignore_errors=True)
