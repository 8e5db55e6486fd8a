"""The settings every test server starts with unless its env says otherwise (2 check workers and
a 2 s math deadline; the defaults, one worker per CPU and 10 s, are sized for a machine of its
own). A module of its own, not ``conftest``: a test that imports ``conftest`` gets whichever
conftest of the run came first on ``sys.path``."""

TEST_SERVER_ENV = {"REFEREE_MATH_WORKERS": "2", "REFEREE_MATH_TIMEOUT_S": "2"}
