"""A small application with the shapes an attacker looks for (tests/*/test_task_security.py).

Workers list `hostile_app.jobs` only; every other module here is off limits to a row.
"""
