insert into schema_version (version, name)
values ($version, $name);
