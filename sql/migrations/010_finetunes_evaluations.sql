-- The closed loop: a model fine-tuned on a published selection (or the base model before SFT), and what each
-- scored on an evaluation. A finetune is keyed by what makes it: selection, base model, trainer config, seed.
create table finetunes (
    finetune_id varchar primary key,
    selection_id varchar not null,
    members_sha256 varchar not null,
    base_model varchar not null,            -- as named: an installed model's name or a folder
    base_fingerprint varchar not null,
    profile varchar not null,               -- the recipe: paper | cpu-small
    config_hash varchar not null,
    config json not null,                   -- the resolved LlamaFactory arguments
    seed integer not null,
    trainer varchar not null,               -- e.g. llamafactory 0.9.5
    is_adapter boolean not null,            -- LoRA adapter (load with peft on the base) or full weights
    model_dir varchar not null,
    train_loss double,
    train_seconds double,
    n_rows bigint,
    run_id varchar,
    created_at timestamp not null default current_timestamp
);

-- One metric of one evaluation of one target, overall (domain '*') or for one domain of a loss file.
create table evaluations (
    target varchar not null,                -- a finetune id, or base:MODEL as given
    finetune_id varchar,                    -- null for a base model
    model_fingerprint varchar not null,     -- the evaluated weights (base, or base + adapter, or merged)
    base_fingerprint varchar not null,
    eval_kind varchar not null,             -- loss | gsm8k | humaneval
    eval_spec varchar not null,             -- as typed, e.g. loss:heldout.jsonl
    eval_file_sha256 varchar not null,
    eval_config json not null,              -- limit, max new tokens, prompt format, demonstrations' sha256...
    eval_config_hash varchar not null,
    domain varchar not null,
    metric varchar not null,
    value double not null,
    n bigint not null,                      -- rows (loss) or samples (harness) behind the value
    tokens bigint,                          -- loss: response tokens scored
    stderr double,
    harness_version varchar,                -- lm-evaluation-harness's, or capsel's own for loss
    run_id varchar not null,
    created_at timestamp not null default current_timestamp,
    primary key (model_fingerprint, eval_kind, eval_file_sha256, eval_config_hash, domain, metric)
);

-- Each evaluation metric with the fine-tune and the selection behind its target (null for a base model): what
-- `capsel evaluations` lists and a comparison of methods reads.
create view evaluation_results as
select
    evaluations.*,
    finetunes.selection_id,
    finetunes.seed,
    finetunes.profile,
    selections.method,
    selections.budget,
    -- what else tells two selections of one method and budget apart
    json_extract_string(selections.manifest, '$.request.ppl_guard') as ppl_guard,
    json_extract_string(selections.manifest, '$.request.ppl_guard_z') as ppl_guard_z,
    json_extract_string(selections.manifest, '$.request.late') as late
from evaluations
left join finetunes on finetunes.finetune_id = evaluations.finetune_id
left join selections on selections.selection_id = finetunes.selection_id;
