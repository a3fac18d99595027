select
    source_id,
    path,
    ingest_run_id
from sources
where sha256 = $sha256;
