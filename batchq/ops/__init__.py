"""The operator's view: why a job is where it is (explain), the figures for Prometheus (metrics)
and the dashboard's charts (charts), and the registry of running workers (registry)."""
