# The image of referee's docker sandbox backend: a debootstrapped Debian root (imported by
# docker/build-sandbox-image.sh and passed in as BASE; there is no registry to pull from) with the
# toolchains on PATH under their plain names (python3, gcc, g++, ...). Programs run as uid 65534
# with a read-only root, /code bind-mounted, /work and /tmp as tmpfs.
ARG BASE
FROM ${BASE}

ENV PATH=/usr/local/bin:/usr/bin:/bin \
    LANG=C.UTF-8 \
    LC_ALL=C.UTF-8 \
    PYTHONDONTWRITEBYTECODE=1

# Mount points of the backend (present in the image so a read-only root needs no new dirs), and
# the list of toolchains this image has, for the backend's language probe and for operators.
RUN set -eu; \
    mkdir -p /code /work /io; \
    chmod 0755 /code /io; chmod 1777 /work /tmp; \
    rm -rf /var/cache/apt/archives/*.deb /var/lib/apt/lists/* /usr/share/doc /usr/share/man \
      /usr/share/info /usr/share/locale; \
    for tool in python3 gcc g++ javac java node go rustc bash; do \
      if command -v "$tool" >/dev/null 2>&1; then echo "$tool"; fi; \
    done > /etc/referee-sandbox-tools; \
    cat /etc/referee-sandbox-tools

USER 65534:65534
WORKDIR /work
CMD ["/bin/bash"]
