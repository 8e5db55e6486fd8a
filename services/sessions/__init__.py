"""Multi-turn sessions: environments held between calls (``/v1/sessions``).

``manager`` holds the live sessions (bounded, reaped, idempotent calls), ``catalog`` the
environments (``python_env``, ``procedural_env``, ``code_env``), ``episode`` what they share.
"""
