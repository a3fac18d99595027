create table if not exists schema_version (
    version integer primary key,
    name varchar not null,
    applied_at timestamp not null default current_timestamp
);
