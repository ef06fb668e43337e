"""S3 operations that fail show no credential: ingestion into a bucket that does not exist (503), registration of
a file there (422), and a merge on Spark whose input object is gone (its failure reason, recorded on the job).
Neither the access key id nor the secret appears in any response, span, log record or the Spark server's log. (The
successful journey is checked the same way in test_object_storage_journey.py.)"""

from __future__ import annotations

import uuid

import pytest

from strata_core.config import Settings
from strata_metastore import migrate
from tests.e2e.shown_text import watching
from tests.fixtures.apps import app_stack, indexer_app, serving
from tests.helpers import ndjson
from tests.planner.compaction_helpers import create_index, ingest_split, open_window, run_triggered_merge

pytestmark = [pytest.mark.spark]


@pytest.fixture(scope="module")
def s3_settings(settings: Settings, pg_databases, s3_server) -> tuple[Settings, Settings]:
    """Settings on the session's bucket and on a bucket that does not exist, sharing a metastore of their own."""
    database_url = pg_databases.create("strata_s3_failures")
    migrate.upgrade(database_url)
    on_database = settings.model_copy(update={"database_url": database_url})
    suffix = uuid.uuid4().hex[:8]
    return (on_database.model_copy(update={"storage_uri": s3_server.storage_uri(f"failures-{suffix}")}),
            on_database.model_copy(update={"storage_uri": f"s3://strata-missing-{suffix}/objects"}))


async def test_failing_s3_operations_show_no_credentials(s3_settings, s3_server, keys, spark_factory, caplog,
                                                         tmp_path_factory):
    on_bucket, on_missing_bucket = s3_settings
    async with app_stack(on_bucket) as stack, \
            serving(indexer_app(on_missing_bucket, stack.clock), "http://indexer-api") as missing:
        with watching(caplog, tmp_path_factory, stack.indexer, stack.planner, stack.query, missing) as shown:
            index_id = await create_index(stack.indexer, keys)
            window = open_window()

            refused = await missing.post(
                f"/v1/indexes/{index_id}/ingest", content=ndjson([{"metric_name": "m", "timestamp_secs": window}]),
                headers={**keys.header(keys.writer), "Content-Type": "application/x-ndjson"})
            assert refused.status_code == 503, refused.text
            assert "object storage write failed" in refused.json()["detail"]
            unreadable = await missing.post(f"/v1/indexes/{index_id}/splits", headers=keys.header(keys.writer),
                                            json={"splits": [{"split_id": "01J00000000000000000000000",
                                                              "uri": "external/x.parquet", "num_rows": 1}]})
            assert unreadable.status_code == 422, unreadable.text

            for seed in range(3):
                await ingest_split(stack.indexer, keys, index_id, window, 50, seed=seed)
            splits = (await stack.indexer.get(f"/v1/indexes/{index_id}/splits",
                                              headers=keys.header(keys.writer))).json()["splits"]
            lost_key = stack.storage.resolve(splits[0]["uri"]).split("/", 1)[1]
            s3_server.client().delete_object(Bucket=s3_server.bucket, Key=lost_key)

            job = await run_triggered_merge(stack.planner, keys, spark_factory, index_id,
                                            until=lambda j: j["failures"] >= 1)
            assert job["last_error"] and job["failure_log"], job

    shown.assert_nowhere(s3_server.secret_access_key, s3_server.access_key_id)
