"""Object storage through pyarrow.fs: a local directory (file://) or S3, addressed by URIs under one root.

Every path a client names is resolved against the root and refused if it escapes it: registration must never
make Strata read or later garbage-collect a file it does not own.

The root URI names a location only (`s3://bucket/prefix`). How to reach S3 (credentials, endpoint, region) comes
from the standard AWS variables, which pyarrow reads in every process that opens a file: the services and the
Spark executors alike. A URI carrying them would be copied into every split's URI, the metastore, API responses
and log lines, and its query string would break the URIs made under it, so it is refused.
"""

from __future__ import annotations

import errno
import io
import os
import posixpath
import shutil
from typing import BinaryIO, NamedTuple
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.fs as pafs

from strata_core.object_requests import MeteredFileSystem

_COPY_CHUNK = 8 << 20
_LOCAL_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0)


class PathOutsideRoot(ValueError):
    pass


class StorageUriRefused(ValueError):
    """The storage root URI carries credentials or connection options: its message never repeats them."""


# What replaces each way of configuring S3 in a URI; README, "Object storage on S3".
_AWS_VARIABLES = ("AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_ENDPOINT_URL, AWS_REGION (or the "
                  "instance's role)")


def _refuse_connection_settings(root_uri: str) -> None:
    parsed = urlparse(root_uri)
    if parsed.username is None and parsed.password is None and not parsed.query:
        return
    location = f"{parsed.scheme}://{parsed.hostname or ''}{parsed.path}"
    raise StorageUriRefused(f"the storage URI must name a location only ({location}): credentials, endpoint and "
                            f"region come from the standard AWS variables {_AWS_VARIABLES}, never from the URI")


# What urlparse splits off a URL's path (params, query, fragment) or strips from it anywhere (tab, CR, LF).
_URL_SPECIAL = frozenset(";?#\t\r\n")


class StoredFile(NamedTuple):
    """A file under the root, as `ObjectStore.locate` found it."""
    uri: str
    path: str
    size: int


class ObjectStore:
    def __init__(self, root_uri: str) -> None:
        _refuse_connection_settings(root_uri)
        self.root_uri = root_uri.rstrip("/")
        inner, root_path = pafs.FileSystem.from_uri(self.root_uri)
        # Every call goes through the meter, so an operation that opened one knows what it cost the store.
        self.fs = MeteredFileSystem(inner)
        self.root_path = posixpath.normpath(root_path)
        root = urlparse(self.root_uri)
        self._root_scheme, self._root_netloc = root.scheme, root.netloc
        self._root_prefix = self.root_path.rstrip("/") + "/"
        # A URI under the root spelled as the root is (what `canonical_uri` returns and clients send back): its
        # path is the root's path and the rest of the URI, as urlparse would find it unless the rest holds a
        # character urlparse treats specially (query, fragment, params, the bytes it strips).
        self._uri_prefix = self.root_uri + "/" if not _URL_SPECIAL.intersection(self.root_uri) else "\0"
        self._uri_base = root.path if root.scheme == "file" else f"{root.netloc}{root.path}"
        self._local = isinstance(inner, pafs.LocalFileSystem)
        if self._local:
            inner.create_dir(self.root_path, recursive=True)

    @property
    def is_local(self) -> bool:
        return self._local

    def uri_for(self, relative_path: str) -> str:
        return f"{self.root_uri}/{relative_path.lstrip('/')}"

    def resolve(self, uri_or_relative: str) -> str:
        """Filesystem path of a URI or root-relative path; PathOutsideRoot if it leaves the root."""
        if uri_or_relative.startswith(self._uri_prefix) and not _URL_SPECIAL.intersection(uri_or_relative):
            candidate = self._uri_base + uri_or_relative[len(self.root_uri):]
        elif "://" in uri_or_relative or uri_or_relative.startswith("file:"):
            parsed = urlparse(uri_or_relative)
            if parsed.scheme != self._root_scheme or parsed.netloc != self._root_netloc:
                raise PathOutsideRoot(f"{uri_or_relative!r} is not under the storage root {self.root_uri!r}")
            candidate = parsed.path if parsed.scheme == "file" else f"{parsed.netloc}{parsed.path}"
        else:
            candidate = posixpath.join(self.root_path, uri_or_relative)
        normalized = posixpath.normpath(candidate)
        if normalized != self.root_path and not normalized.startswith(self._root_prefix):
            raise PathOutsideRoot(f"{uri_or_relative!r} is not under the storage root {self.root_uri!r}")
        return normalized

    def canonical_uri(self, uri_or_relative: str) -> str:
        """The one URI spelling of a path under the root, so the same file is never registered twice."""
        path = self.resolve(uri_or_relative)
        return self.uri_for(path[len(self._root_prefix):] if path != self.root_path else "")

    def write_bytes(self, uri: str, data: bytes) -> None:
        if self._local:
            self._write_local(self.resolve(uri), data)
        else:
            self.write_from(uri, io.BytesIO(data))

    def _write_local(self, path: str, data: bytes) -> None:
        """`write_from` on a local disk, in plain system calls: the same temporary name and rename, the same
        requests counted, without a pyarrow stream (and its counting wrapper) or a directory check per write.
        Ingestion writes three files per request; through pyarrow each took 0.43 ms of CPU, this way 0.27
        (docs/benchmarks.md, "Ingestion on plain asyncpg")."""
        tmp = f"{path}.tmp-upload"
        try:
            fd = os.open(tmp, _LOCAL_WRITE_FLAGS, 0o666)
        except FileNotFoundError:  # the first file of its directory
            os.makedirs(posixpath.dirname(path), exist_ok=True)
            fd = os.open(tmp, _LOCAL_WRITE_FLAGS, 0o666)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        os.replace(tmp, path)
        self.fs.count_local_write(len(data))

    def write_from(self, uri: str, source: BinaryIO) -> None:
        """The rest of `source` as the object's content, copied a chunk at a time (a file larger than memory)."""
        path = self.resolve(uri)
        self.fs.create_dir(posixpath.dirname(path), recursive=True)
        # Write under a temporary name and move: a crash never leaves a truncated file under the final name.
        tmp = f"{path}.tmp-upload"
        with self.fs.open_output_stream(tmp) as out:
            shutil.copyfileobj(source, out, _COPY_CHUNK)
        self.fs.move(tmp, path)

    def _file_info(self, uri: str) -> pafs.FileInfo | None:
        """The file's info, or None when no file can be there: a name too long for the filesystem is a file
        that does not exist, not a storage failure."""
        return self._info_at(self.resolve(uri))

    def _info_at(self, path: str) -> pafs.FileInfo | None:
        try:
            info = self.fs.get_file_info(path)
        except OSError as exc:
            if exc.errno == errno.ENAMETOOLONG:
                return None
            raise
        return info if info.type == pafs.FileType.File else None

    def exists(self, uri: str) -> bool:
        return self._file_info(uri) is not None

    def size(self, uri: str) -> int:
        """Size in bytes; FileNotFoundError if there is no file (one metadata call answers both)."""
        info = self._file_info(uri)
        if info is None:
            raise FileNotFoundError(uri)
        return int(info.size)

    def locate(self, uri_or_relative: str) -> StoredFile:
        """The file's canonical URI, path and size, its path resolved once (as `canonical_uri` and `size` answer
        them, and count their call): PathOutsideRoot, or FileNotFoundError if there is no file."""
        path = self.resolve(uri_or_relative)
        uri = self.uri_for(path[len(self._root_prefix):] if path != self.root_path else "")
        info = self._info_at(path)
        if info is None:
            raise FileNotFoundError(uri)
        return StoredFile(uri, path, int(info.size))

    def open_located(self, file: StoredFile) -> pa.NativeFile:
        """`open_input` of a located file."""
        return self.fs.open_input_file(file.path)

    def read_located(self, file: StoredFile) -> pa.Buffer:
        """A located file's whole content, in one read."""
        return self.fs.read_whole_file(file.path)

    def open_input(self, uri: str) -> pa.NativeFile:
        return self.fs.open_input_file(self.resolve(uri))

    def open_input_uncounted(self, uri: str) -> pa.NativeFile:
        """A plain handle whose reads no meter sees: for a caller that counts its requests itself, as the local
        engine does from the footer (a counting handle cost its scans 16% on a local disk; docs/benchmarks.md,
        "The cost of counting object-store requests")."""
        return self.fs.inner.open_input_file(self.resolve(uri))

    def delete(self, uri: str) -> None:
        try:
            self.fs.delete_file(self.resolve(uri))
        except FileNotFoundError:
            pass

    def root_answers(self) -> bool:
        """Whether the store as a whole answers (its root can be listed): what tells one object's storage error
        from an outage of the store."""
        try:
            self.fs.get_file_info(pafs.FileSelector(self.root_path, recursive=False, allow_not_found=False))
        except OSError:
            return False
        return True

    def list_files_with_mtime(self, prefix: str = "") -> list[tuple[str, float]]:
        """(uri, modification time in epoch seconds) of every file under `prefix`."""
        base = self.resolve(prefix) if prefix else self.root_path
        selector = pafs.FileSelector(base, recursive=True, allow_not_found=True)
        return sorted(
            (self.uri_for(posixpath.relpath(i.path, self.root_path)), i.mtime.timestamp() if i.mtime else 0.0)
            for i in self.fs.get_file_info(selector)
            if i.type == pafs.FileType.File
        )

    def list_files(self, prefix: str = "") -> list[str]:
        base = self.resolve(prefix) if prefix else self.root_path
        selector = pafs.FileSelector(base, recursive=True, allow_not_found=True)
        return sorted(
            self.uri_for(posixpath.relpath(i.path, self.root_path))
            for i in self.fs.get_file_info(selector)
            if i.type == pafs.FileType.File
        )
