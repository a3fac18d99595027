-- One row per model fingerprint; a fingerprint already known keeps its first description.
insert into models (model_fingerprint, name_or_path, revision, weight_files, dtype, architecture, n_layers)
values ($model_fingerprint, $name_or_path, $revision, $weight_files, $dtype, $architecture, $n_layers)
on conflict do nothing;
