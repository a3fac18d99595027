insert into sampled_out (source_id, source_row, candidate_id, domain, ingest_run_id)
select
    source_id,
    source_row,
    candidate_id,
    domain,
    ingest_run_id
from candidates
where candidate_id in (select candidate_id from ingest_not_drawn)
order by source_id, source_row;
