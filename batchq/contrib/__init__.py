"""Integrations with frameworks (optional extras): each subpackage imports its framework."""
