-- A publish is about to build its staging folder.
insert or replace into publish_staging (staging_path, selection_id, run_id, started_at)
values ($staging_path, $selection_id, $run_id, $started_at);
