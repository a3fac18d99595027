delete from candidates
where candidate_id in (select candidate_id from ingest_not_drawn);
