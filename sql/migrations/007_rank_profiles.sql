-- The rank-profile verdict of a model, kept so the flows survey each model once (capsel.profile.verdict_cache).
-- profile_key hashes the model's files, the prompt format and the survey's version: new weights, a new
-- tokenizer or a changed survey get a new row; an unchanged model is read, not surveyed again.
create table rank_profiles (
    profile_key varchar primary key,
    model_name varchar not null,
    prompt_format varchar not null,
    present boolean not null,
    verdict json not null,
    created_at timestamp not null default current_timestamp
);
