-- A scoring or generation configuration, stored once under its hash.
insert into scoring_configs (config_hash, config)
values ($config_hash, $config)
on conflict do nothing;
