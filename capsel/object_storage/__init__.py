"""Object storage (s3://, gs://, any fsspec URL): input listing and download for ingest, folder upload for publish."""
