"""Alembic environment and versions for the universalrag schema (shipped as ``universalrag.migrations``)."""
