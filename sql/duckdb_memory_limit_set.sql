set memory_limit = $memory_limit;
