"""referee: services/routes."""
