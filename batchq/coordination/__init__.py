"""Coordination across processes and hosts, on the database: locks and semaphores (locks),
partitioned claims (partitions), and per-host process slots (slots)."""
