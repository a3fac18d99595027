-- The staging folders a publish of this store is building (one row from before the folder is made until it is
-- renamed into place or removed): a kill leaves the row, so a reconcile finds the folder whatever --out the next
-- command names, and removes only folders this store made.
create table if not exists publish_staging (
    staging_path varchar primary key,
    selection_id varchar not null,
    run_id varchar,
    started_at timestamp not null
);
