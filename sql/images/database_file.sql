-- The file of the connection's database (null for a database in memory): images are stored beside it.
select path as database_file
from duckdb_databases()
where database_name = current_database();
