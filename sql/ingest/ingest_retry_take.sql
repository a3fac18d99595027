-- `ingest --reingest`: move a source's quarantined rows to the history table before they are read again.
insert into quarantine_retried (
    source_id, source_row, domain, raw_text, reason, detail, ingest_run_id, retried_by_run_id
)
select
    source_id,
    source_row,
    domain,
    raw_text,
    reason,
    detail,
    ingest_run_id,
    $run_id as retried_by_run_id
from quarantine
where source_id = $source_id
order by source_row
returning source_row;
