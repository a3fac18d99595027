-- The selection's folder is in place: its row stops being 'publishing'.
update selections
set status = 'published'
where selection_id = $selection_id
    and status = 'publishing';
