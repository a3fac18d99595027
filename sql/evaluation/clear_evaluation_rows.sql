-- Before an evaluation's set is stored: what an earlier, unmarked store of it left in evaluation_rows (a database written
-- before sets were marked, or a set being replaced) goes, in the same transaction.
delete from evaluation_rows
where model_fingerprint = $model_fingerprint
  and eval_kind = $eval_kind
  and eval_file_sha256 = $eval_file_sha256
  and eval_config_hash = $eval_config_hash;
