"""Object storage confinement: no path, relative or absolute, escapes the root; a root URI carrying credentials or
connection options is refused without repeating them."""

from __future__ import annotations

import pytest

from strata_core.storage import ObjectStore, PathOutsideRoot, StorageUriRefused


@pytest.mark.parametrize("path", ["../x", "a/../../x", "/etc/passwd", "file:///etc/passwd", "s3://bucket/x",
                                  "file:///tmp", "a/../../root-sibling/x"])
def test_paths_outside_the_root_are_refused(tmp_path, path):
    store = ObjectStore((tmp_path / "root").as_uri())
    with pytest.raises(PathOutsideRoot):
        store.resolve(path)


def test_relative_and_absolute_spellings_resolve_to_one_uri(tmp_path):
    store = ObjectStore((tmp_path / "root").as_uri())
    absolute = (tmp_path / "root" / "a" / "b.parquet").as_uri()
    assert store.canonical_uri("a/./b.parquet") == store.canonical_uri(absolute) == absolute


def test_write_is_atomic_under_the_final_name(tmp_path):
    store = ObjectStore((tmp_path / "root").as_uri())
    store.write_bytes("x/y.bin", b"abc")
    assert store.list_files() == [store.uri_for("x/y.bin")]
    assert store.size("x/y.bin") == 3
    store.delete("x/y.bin")
    store.delete("x/y.bin")
    assert store.list_files() == []


@pytest.mark.parametrize("uri", ["s3://AKIAEXAMPLEKEYID:wJalr-secret@bucket/prefix",
                                 "s3://bucket/prefix?access_key=AKIAEXAMPLEKEYID&secret_key=wJalr-secret",
                                 "s3://bucket/prefix?endpoint_override=127.0.0.1:9000&region=wJalr-secret",
                                 "file:///tmp/root?AKIAEXAMPLEKEYID=wJalr-secret"])
def test_a_root_with_credentials_or_options_is_refused_without_repeating_them(uri):
    with pytest.raises(StorageUriRefused) as refused:
        ObjectStore(uri)
    message = str(refused.value)
    assert "wJalr-secret" not in message and "AKIAEXAMPLEKEYID" not in message
    assert "AWS_SECRET_ACCESS_KEY" in message and "AWS_ENDPOINT_URL" in message
