-- Counts start at zero and are filled in by ingest_source_counts once the unit is classified.
insert into sources (
    source_id, path, sha256, n_bytes, n_rows_read, n_inserted, n_duplicates, n_quarantined,
    n_sampled_out, domain_option, field_map, ingest_run_id
)
values (
    $source_id, $path, $sha256, $n_bytes, 0, 0, 0, 0, 0, $domain_option, $field_map, $run_id
);
