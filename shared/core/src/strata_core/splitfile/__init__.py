"""Reading and writing split files (Parquet) with pyarrow only: shared by ingestion and the merge."""
