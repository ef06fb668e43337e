"""Where Strata's objects live under the storage root: one tree per index incarnation.

    indexes/{index_id}/{incarnation}/
        splits/{split_id}.parquet                 ingested splits
        merges/{job_id}/{fencing_token}/...       one merge attempt's outputs (published in place when it succeeds)
        artifacts/{split_id}/...                  artifact builds and the snapshot manifest
                                                  (names below the split: strata_core.artifacts.naming)
    _commit_log/
        entries/{seq}.json                        one committed transaction's changes (metastore.commit_log)
        checkpoints/{seq}/                        every logged table as of entry {seq}, and its manifest.json

Every function returns a path relative to the root; `ObjectStore.uri_for` makes it a URI. Registered splits keep
the path they were registered with, anywhere under the root.
"""

from __future__ import annotations


def incarnation_dir(index_id: str, incarnation: str) -> str:
    return f"indexes/{index_id}/{incarnation}"


def split_path(index_id: str, incarnation: str, split_id: str) -> str:
    """An ingested split's file."""
    return f"{incarnation_dir(index_id, incarnation)}/splits/{split_id}.parquet"


def merges_dir(index_id: str, incarnation: str) -> str:
    """Every merge attempt's outputs, published or not (the garbage collector lists it)."""
    return f"{incarnation_dir(index_id, incarnation)}/merges"


def merge_attempt_dir(index_id: str, incarnation: str, job_id: str, fencing_token: int) -> str:
    """One attempt's outputs: specific to (job, token), so a stale attempt never overwrites a live one."""
    return f"{merges_dir(index_id, incarnation)}/{job_id}/{fencing_token}"


def artifacts_dir(index_id: str, incarnation: str) -> str:
    """Every file's artifacts, each file's under `{split_id}/`."""
    return f"{incarnation_dir(index_id, incarnation)}/artifacts"


COMMIT_LOG_DIR = "_commit_log"
COMMIT_LOG_ENTRIES_DIR = f"{COMMIT_LOG_DIR}/entries"
COMMIT_LOG_CHECKPOINTS_DIR = f"{COMMIT_LOG_DIR}/checkpoints"
# Zero-padded, so listing order is number order.
_SEQ_DIGITS = 20


def commit_log_entry_path(seq: int) -> str:
    return f"{COMMIT_LOG_ENTRIES_DIR}/{seq:0{_SEQ_DIGITS}d}.json"


def commit_log_checkpoint_dir(seq: int) -> str:
    return f"{COMMIT_LOG_CHECKPOINTS_DIR}/{seq:0{_SEQ_DIGITS}d}"


def commit_log_seq_of(name: str) -> int | None:
    """The number of an entry file or checkpoint directory name (the last path part), None for anything else
    (a temporary upload, a stray file)."""
    stem = name.rsplit("/", 1)[-1].removesuffix(".json")
    return int(stem) if len(stem) == _SEQ_DIGITS and stem.isdigit() else None
