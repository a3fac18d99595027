-- Keep a survey's verdict; a verdict already kept under the key (the same files) stays.
insert into rank_profiles (profile_key, model_name, prompt_format, present, verdict)
values ($profile_key, $model_name, $prompt_format, $present, $verdict)
on conflict (profile_key) do nothing;
