"""referee: trainer_adapter."""
