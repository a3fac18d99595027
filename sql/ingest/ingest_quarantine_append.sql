insert into quarantine by name
select *
from quarantine_chunk;
