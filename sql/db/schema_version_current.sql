select coalesce(max(version), 0) as schema_version
from schema_version;
