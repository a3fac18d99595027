drop table if exists ingest_not_drawn;
