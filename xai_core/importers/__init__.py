"""Importers (being built)."""
