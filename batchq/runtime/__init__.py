"""The processes cron and supervisors start: the worker of `batchq run` (worker) and the
consumer of `batchq consume` (consumer), both driven by one runner (runner: signals, liveness,
reconnects, stop conditions), and the sweeps of `batchq gc-processing` and `gc-error` (sweeps)."""
