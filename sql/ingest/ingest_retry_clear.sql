delete from quarantine
where source_id = $source_id;
