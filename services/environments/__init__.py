"""Procedural environments and the curriculum."""
