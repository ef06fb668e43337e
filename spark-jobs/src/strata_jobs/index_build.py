"""One file's artifact build, as run inside a Spark Python worker: read the split, build the configured artifacts
(`strata_core.artifacts`), upload each under its deterministic name with retry and backoff, and describe what
was stored. Pure pyarrow and object storage: no database, no Spark API (that is `spark_index`)."""

from __future__ import annotations

import json
import random
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from strata_core.artifacts import artifact_key, build_artifacts
from strata_core.domain.artifact_refs import ArtifactRef
from strata_core.domain.fields import FieldType
from strata_core.domain.index_config import ArtifactConfig
from strata_jobs.merge_output import filesystem_for, upload


class UploadFailed(Exception):
    pass


@dataclass(frozen=True, slots=True)
class IndexBuildSpec:
    job_id: str
    fencing_token: int
    split_id: str
    uri: str
    # Where the file's artifacts live: `{artifact_prefix}/{artifact_key(...)}`.
    artifact_prefix: str
    config: dict[str, Any]
    field_types: dict[str, str]
    zstd_level: int = 3
    upload_attempts: int = 5
    upload_backoff_secs: float = 0.2
    # Fault injection for tests: this many uploads fail before the storage "recovers".
    fault_upload_failures: int = 0


@dataclass(frozen=True, slots=True)
class IndexBuildResult:
    split_id: str
    artifacts: list[ArtifactRef]
    skipped: list[dict[str, Any]] = field(default_factory=list)
    upload_retries: int = 0
    build_secs: float = 0.0
    upload_secs: float = 0.0


def spec_to_json(spec: IndexBuildSpec) -> str:
    return json.dumps(asdict(spec))


def spec_from_json(text: str) -> IndexBuildSpec:
    return IndexBuildSpec(**json.loads(text))


def result_to_json(result: IndexBuildResult) -> str:
    body = asdict(result)
    body["artifacts"] = [a.to_json() for a in result.artifacts]
    return json.dumps(body)


def result_from_json(text: str) -> IndexBuildResult:
    body = json.loads(text)
    body["artifacts"] = [ArtifactRef.from_json(a) for a in body["artifacts"]]
    return IndexBuildResult(**body)


class _Uploader:
    """Uploads with exponential backoff and jitter; each attempt writes a temporary and moves it into place, so
    a failed attempt never leaves a partial object under the final name."""

    def __init__(self, attempts: int, backoff_secs: float, injected_failures: int) -> None:
        self.attempts = max(1, attempts)
        self.backoff_secs = backoff_secs
        self.injected_failures = injected_failures
        self.retries = 0

    def put(self, uri: str, data: bytes) -> None:
        delay = self.backoff_secs
        for attempt in range(1, self.attempts + 1):
            try:
                if self.injected_failures > 0:
                    self.injected_failures -= 1
                    raise OSError("injected storage failure")
                upload(uri, data)
                return
            except OSError as exc:
                if attempt == self.attempts:
                    raise UploadFailed(f"upload of {uri} failed {attempt} times: {exc}") from exc
                self.retries += 1
                time.sleep(delay * (0.5 + random.random()))  # noqa: S311 - jitter, not cryptography
                delay *= 2


def run_index_build(spec: IndexBuildSpec) -> IndexBuildResult:
    started = time.perf_counter()
    fs, path = filesystem_for(spec.uri)
    with fs.open_input_file(path) as source:
        # The source itself (not a ParquetFile): the builder then reads few-valued strings as dictionaries.
        built = build_artifacts(source, spec.split_id, ArtifactConfig.model_validate(spec.config),
                                {name: FieldType(t) for name, t in spec.field_types.items()},
                                zstd_level=spec.zstd_level)
    build_secs = time.perf_counter() - started
    uploader = _Uploader(spec.upload_attempts, spec.upload_backoff_secs, spec.fault_upload_failures)
    refs = []
    for artifact in built.artifacts:
        key = artifact_key(spec.split_id, artifact.artifact_type, artifact.column, artifact.format_version)
        uri = f"{spec.artifact_prefix.rstrip('/')}/{key}"
        uploader.put(uri, artifact.data)
        refs.append(ArtifactRef(artifact_type=str(artifact.artifact_type), column=artifact.column,
                                format_version=artifact.format_version, uri=uri, size_bytes=artifact.size_bytes,
                                content_hash=artifact.content_hash))
    return IndexBuildResult(split_id=spec.split_id, artifacts=refs, skipped=list(built.skipped),
                            upload_retries=uploader.retries, build_secs=round(build_secs, 4),
                            upload_secs=round(time.perf_counter() - started - build_secs, 4))
