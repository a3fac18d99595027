-- The file of the database this connection works on (its images live beside it).
select path
from duckdb_databases()
where database_name = current_database();
