-- The kept verdict of one model and prompt format, if it was surveyed before.
select verdict, created_at
from rank_profiles
where profile_key = $profile_key;
