"""The operator's view of the commit log over HTTP: verify PostgreSQL against the bucket (`strata metastore
verify` does the same without the API)."""
