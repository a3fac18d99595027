-- Quarantined rows that `capsel ingest --reingest` took out of quarantine to read again under new
-- options. They are kept here as history; each retried row's new outcome (a candidate, a duplicate or a
-- quarantine row again) carries the retrying run's id, so per source the counts still add up.
create table quarantine_retried (
    source_id varchar not null,
    source_row bigint not null,
    domain varchar,
    raw_text varchar,
    reason varchar not null,
    detail varchar,
    ingest_run_id varchar not null,        -- the run that first quarantined the row
    retried_by_run_id varchar not null,    -- the --reingest run that read it again
    retried_at timestamp not null default current_timestamp
);
