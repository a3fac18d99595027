select current_setting('memory_limit') as memory_limit;
