-- A finished fine-tune; a second identical call found it already recorded.
insert into finetunes (
    finetune_id, selection_id, members_sha256, base_model, base_fingerprint, profile, config_hash, config,
    seed, trainer, is_adapter, model_dir, train_loss, train_seconds, n_rows, run_id
)
values (
    $finetune_id, $selection_id, $members_sha256, $base_model, $base_fingerprint, $profile, $config_hash, $config,
    $seed, $trainer, $is_adapter, $model_dir, $train_loss, $train_seconds, $n_rows, $run_id
)
on conflict (finetune_id) do nothing;
