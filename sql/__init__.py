"""The SQL of every dialect, as data: installed as the package ``batchq.sql`` and read by
``batchq.backends.sqlfiles`` through importlib.resources. No code lives here."""
