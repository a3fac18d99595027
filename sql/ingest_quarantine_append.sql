insert into quarantine by name
select
    $source_id as source_id,
    $run_id as ingest_run_id,
    *
from quarantine_chunk;
