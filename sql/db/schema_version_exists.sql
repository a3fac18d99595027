select count(*) > 0 as is_present
from information_schema.tables
where table_name = 'schema_version';
