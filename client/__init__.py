"""referee: client."""
