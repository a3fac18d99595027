-- The file of the connected database (null in memory): its image store lies beside it.
select path from duckdb_databases() where database_name = current_database();
