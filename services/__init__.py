"""referee: services."""
