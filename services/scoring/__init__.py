"""The scoring pipeline: the Scorer and the stages a batch passes through (code and python
graders on the sandbox, judges, PRM estimates, group graders, named and OpenAI graders)."""
