-- A staging folder that is gone (renamed into place, removed by its publisher or by a reconcile).
delete from publish_staging
where staging_path = $staging_path;
