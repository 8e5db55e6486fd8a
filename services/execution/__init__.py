"""Where programs and models run: the sandbox slots, the code runners (local and remote),
the LLM backends."""
