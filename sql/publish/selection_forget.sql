-- A selection whose folder never appeared: only a 'publishing' row is ever forgotten.
delete from selections
where selection_id = $selection_id
    and status = 'publishing';
