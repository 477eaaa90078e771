"""The vocabulary every part shares: configuration values and their parsing (config), payload
serializers, values read from rows (stored), the Job a task sees (job), and what a failure looks
like (failures: fingerprints and groups). Imports nothing of batchq but batchq.errors."""
