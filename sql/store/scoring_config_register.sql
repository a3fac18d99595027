-- A scoring or generation configuration, stored once under its hash.
insert into scoring_configs (config_hash, config, generation_hash)
values ($config_hash, $config, $generation_hash)
on conflict do nothing;
