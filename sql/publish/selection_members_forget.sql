-- The members of a selection whose folder never appeared (run before selection_forget).
delete from selection_members
where selection_id = $selection_id
    and selection_id in (select selection_id from selections where status = 'publishing');
