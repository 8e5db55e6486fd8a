"""referee: genrm."""
