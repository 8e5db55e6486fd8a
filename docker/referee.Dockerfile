# The images of the distributed stack (docker-compose.yml), one target per role:
#
#   server   the api (`referee serve`, command `api`) and the workers (`referee worker`, command
#            `worker`): server + genrm + environments extras (CPU torch, transformers,
#            reasoning-gym), no toolchain, non-root
#   sandbox  a sandbox node: referee serve with bubblewrap and every language's toolchain; root,
#            with the few privileges docker-compose.yml grants it (see docker/sandbox-seccomp.json)
#   redis    redis-server from Debian, for hosts that cannot pull the official redis image
#
#   docker build -f docker/referee.Dockerfile --target server -t referee-server .
#
# Build arguments:
#   BASE             a Debian bookworm image with python3 (default python:3.11-slim-bookworm;
#                    docker/build-images.sh passes a root it debootstraps and imports)
#   TORCH_INDEX_URL  where pip finds the CPU build of torch (default PyTorch's CPU index; empty:
#                    PyPI only)
#   TORCH_FIND_LINKS a --find-links location with a torch wheel (docker/build-images.sh serves
#                    one on 127.0.0.1 during the build)
# A CA bundle for pip (a TLS-inspecting proxy) goes in docker/certs/ca-certificates.crt.
#
# Dependencies are installed before the source is copied (the lists of pyproject.toml's extras,
# written by docker/requirements.py in a stage of their own), so a change to the code rebuilds
# one small layer.

ARG BASE=python:3.11-slim-bookworm

# -- the requirement lists, alone: a change elsewhere in pyproject.toml (another extra, the tools'
# settings) leaves them, and so every dependency layer below, as they were -----------------------
FROM ${BASE} AS requirements
COPY docker/requirements.py pyproject.toml /opt/referee-build/
RUN cd /opt/referee-build \
 && python3 requirements.py pyproject.toml server > requirements-server.txt \
 && python3 requirements.py pyproject.toml genrm > requirements-genrm.txt \
 && python3 requirements.py pyproject.toml environments > requirements-environments.txt

# -- python and the server's dependencies ---------------------------------------------------------
FROM ${BASE} AS base
ENV PATH=/opt/referee/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DEFAULT_TIMEOUT=180
COPY docker/certs/ /opt/referee-build/certs/
COPY docker/apt-install.sh /opt/referee-build/
RUN sh /opt/referee-build/apt-install.sh base \
 && python3 -m venv /opt/referee \
 && if [ -s /opt/referee-build/certs/ca-certificates.crt ]; then \
      export PIP_CERT=/opt/referee-build/certs/ca-certificates.crt; fi \
 && pip install -q --upgrade pip "setuptools>=68" wheel
COPY --from=requirements /opt/referee-build/requirements-server.txt /opt/referee-build/
RUN if [ -s /opt/referee-build/certs/ca-certificates.crt ]; then \
      export PIP_CERT=/opt/referee-build/certs/ca-certificates.crt; fi \
 && pip install -q -r /opt/referee-build/requirements-server.txt
ENTRYPOINT ["/opt/referee-build/entrypoint.sh"]

# -- wheels of the environments extra (reasoning-gym): one of its dependencies (pycosat) comes
# only as sources, so they are built here, where a compiler may be installed, not in the server
FROM base AS environment-wheels
COPY --from=requirements /opt/referee-build/requirements-environments.txt /opt/wheels/
RUN sh /opt/referee-build/apt-install.sh build \
 && if [ -s /opt/referee-build/certs/ca-certificates.crt ]; then \
      export PIP_CERT=/opt/referee-build/certs/ca-certificates.crt; fi \
 && pip wheel -q -w /opt/wheels -r /opt/wheels/requirements-environments.txt

# -- server: the api and the workers (one image, two commands) ----------------------------------
# CPU torch and transformers are here for in-process models (the PRM policy of a worker, a small
# judge); with the judge and policy on a vLLM server they are unused.
FROM base AS server
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
ARG TORCH_FIND_LINKS=
COPY --from=requirements /opt/referee-build/requirements-genrm.txt /opt/referee-build/
RUN if [ -s /opt/referee-build/certs/ca-certificates.crt ]; then \
      export PIP_CERT=/opt/referee-build/certs/ca-certificates.crt; fi \
 && pip install -q "torch==2.13.0+cpu" \
      ${TORCH_INDEX_URL:+--extra-index-url "$TORCH_INDEX_URL"} \
      ${TORCH_FIND_LINKS:+--find-links "$TORCH_FIND_LINKS"} \
 && pip install -q -r /opt/referee-build/requirements-genrm.txt
# reasoning-gym for the procedural grader and /v1/environments, from the wheels built above
COPY --from=environment-wheels /opt/wheels /opt/referee-build/wheels
RUN pip install -q --no-index --find-links /opt/referee-build/wheels \
      -r /opt/referee-build/wheels/requirements-environments.txt \
 && rm -rf /opt/referee-build/wheels
COPY docker/entrypoint.sh docker/healthcheck.py /opt/referee-build/
COPY pyproject.toml README.md /src/
COPY verifiers /src/verifiers
COPY sandbox /src/sandbox
COPY genrm /src/genrm
COPY services /src/services
COPY client /src/client
COPY trainer_adapter /src/trainer_adapter
RUN pip install -q --no-deps --no-build-isolation /src && rm -rf /src \
 && useradd --system --uid 10001 --user-group --create-home --home-dir /var/lib/referee referee
USER referee
WORKDIR /var/lib/referee
ENV REFEREE_PORT=8000
EXPOSE 8000
# The api's; docker-compose.yml gives the worker its own (`healthcheck.py worker`).
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
  CMD ["python3", "/opt/referee-build/healthcheck.py", "api"]
CMD ["api"]

# -- sandbox node: bubblewrap and the toolchains --------------------------------------------------
FROM base AS sandbox
RUN sh /opt/referee-build/apt-install.sh sandbox
COPY docker/entrypoint.sh docker/healthcheck.py /opt/referee-build/
COPY pyproject.toml README.md /src/
COPY verifiers /src/verifiers
COPY sandbox /src/sandbox
COPY genrm /src/genrm
COPY services /src/services
COPY client /src/client
COPY trainer_adapter /src/trainer_adapter
RUN pip install -q --no-deps --no-build-isolation /src && rm -rf /src
ENV REFEREE_PORT=8001 \
    REFEREE_SANDBOX_BACKEND=bwrap
EXPOSE 8001
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
  CMD ["python3", "/opt/referee-build/healthcheck.py", "sandbox"]
CMD ["sandbox"]

# -- redis (the official image is the better choice where a registry is reachable) --------------
FROM ${BASE} AS redis
COPY docker/apt-install.sh /opt/referee-build/
RUN sh /opt/referee-build/apt-install.sh redis \
 && mkdir -p /data && chown redis:redis /data
USER redis
WORKDIR /data
EXPOSE 6379
CMD ["redis-server"]
