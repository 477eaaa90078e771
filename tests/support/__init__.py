"""Helpers shared by the test tiers (fixtures stay in the conftest.py files)."""
