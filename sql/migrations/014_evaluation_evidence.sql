-- The evidence behind every evaluation metric: each row's outcome, a bootstrap interval on the metric, and a
-- marker that an evaluation's results were all stored (reuse takes only a complete set).
alter table evaluations add column ci_low double;
alter table evaluations add column ci_high double;
alter table evaluations add column ci_resamples integer;   -- bootstrap resamples behind the interval
alter table evaluations add column ci_seed integer;

-- One evaluated row's outcome for one metric: the metric is the ratio of sums over rows, sum(outcome) / sum(weight).
-- loss: outcome = the row's response NLL sum, weight = its response tokens; gsm8k and humaneval: outcome = the
-- question's correct (0 or 1, from the harness's logged samples), weight = 1.
create table evaluation_rows (
    model_fingerprint varchar not null,
    eval_kind varchar not null,
    eval_file_sha256 varchar not null,
    eval_config_hash varchar not null,
    metric varchar not null,
    row_index bigint not null,              -- loss: the row's position in the file; harness: lm-eval's doc_id
    domain varchar not null,
    outcome double not null,
    weight double not null,
    run_id varchar not null,
    primary key (model_fingerprint, eval_kind, eval_file_sha256, eval_config_hash, metric, row_index)
);

-- Written last, in the transaction that stores an evaluation's metrics and rows: only a set with this row is
-- reused (a kill -9 between two metric rows leaves none of them).
create table evaluation_sets (
    model_fingerprint varchar not null,
    eval_kind varchar not null,
    eval_file_sha256 varchar not null,
    eval_config_hash varchar not null,
    n_results integer not null,
    n_rows bigint not null,
    run_id varchar not null,
    created_at timestamp not null default current_timestamp,
    primary key (model_fingerprint, eval_kind, eval_file_sha256, eval_config_hash)
);
