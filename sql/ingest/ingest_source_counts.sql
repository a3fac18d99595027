-- Final counts of one source, taken from where its rows landed, so they cannot drift. A null
-- $n_rows_read keeps the rows read (a --reingest retry reads no new rows).
update sources
set
    n_rows_read = coalesce(cast($n_rows_read as bigint), n_rows_read),
    n_inserted = (select count(*) from candidates where source_id = $source_id),
    n_duplicates = (select count(*) from duplicates where source_id = $source_id),
    n_quarantined = (select count(*) from quarantine where source_id = $source_id),
    n_sampled_out = (select count(*) from sampled_out where source_id = $source_id)
where source_id = $source_id
returning n_rows_read, n_inserted, n_duplicates, n_quarantined, n_sampled_out;
