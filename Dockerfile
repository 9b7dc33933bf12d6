# One image for every daemon of the docker-compose cluster (nimbus, supervisors, ui, and the
# Spark master and worker, which run the installed PySpark's launcher: Spark executors need the
# same Python environment as the stormpy workers whose Spark bolts use them).
# The entry point is the `stormpy` command: `docker run stormpy:latest list --nimbus HOST:6627`.
#
# BASE_IMAGE: python:3.11-slim where a registry is reachable; where none is, `make images` builds
# a local base from Debian packages (docker/base/build-base-images.sh: Python 3.11 with headers,
# gcc, a JRE, the machine's CA certificates) and passes it here. Either way Python runs in the
# virtualenv /opt/venv, as the non-root user `stormpy`.
ARG BASE_IMAGE=python:3.11-slim
FROM ${BASE_IMAGE}

WORKDIR /opt/stormpy
# gcc compiles the tuple path (mypyc, see setup.py); a Java runtime for Spark (drivers in stormpy
# workers, the Spark master, worker and executors). Installed only when the base lacks them.
RUN if ! command -v java >/dev/null || ! command -v gcc >/dev/null || ! command -v ps >/dev/null; then \
        apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev \
            openjdk-17-jre-headless procps && rm -rf /var/lib/apt/lists/*; \
    fi \
    && python3.11 -m venv /opt/venv \
    && useradd --system --uid 10001 --user-group --home-dir /var/lib/stormpy --shell /usr/sbin/nologin stormpy \
    && mkdir -p /var/lib/stormpy /var/lib/spark \
    && chown stormpy:stormpy /var/lib/stormpy /var/lib/spark
ENV PATH=/opt/venv/bin:$PATH \
    PIP_CERT=/etc/ssl/certs/ca-certificates.crt
# Dependencies first, in a layer of their own (rebuilt only when they change): a new stormpy source
# tree rebuilds only the small layers below. `make images` stages the host's wheels of exactly
# what its virtualenv runs (docker/stage-build.sh; pip's cache makes that quick, PySpark's wheel
# included) when the host fits the image (Linux, CPython 3.11); they install without an index.
# Without them (a plain `docker-compose build`, another platform, or a set that does not resolve
# here) pip downloads from the index as usual. (pyproject.toml is a source of every such COPY so
# that it has one when .build/docker was not staged.)
COPY pyproject.toml docker/image-requirements.py .build/docker/wheel[s] /tmp/wheels/
RUN python /tmp/wheels/image-requirements.py /tmp/wheels/pyproject.toml > /tmp/requirements.txt \
    && { pip install --no-cache-dir --no-index --find-links /tmp/wheels -r /tmp/requirements.txt \
         || pip install --no-cache-dir --find-links /tmp/wheels -r /tmp/requirements.txt; } \
    && rm -rf /tmp/wheels /tmp/requirements.txt
COPY setup.py README.md pyproject.toml ./
COPY src ./src
# The tuple path compiled with mypyc (setup.py): the host's own in-place build when it was staged
# and loads here (docker/use-host-native.py), else compiled now (minutes on 2 cores). The image
# fails to build if its stormpy would run the pure-Python tuple path.
COPY pyproject.toml docker/use-host-native.py .build/docker/nativ[e] /tmp/native/
RUN STORMPY_MYPYC=0 pip install --no-cache-dir --no-build-isolation --no-deps '.[spark,ui]' \
    && if ! python /tmp/native/use-host-native.py /tmp/native; then \
         STORMPY_MYPYC=1 pip install --no-cache-dir --no-build-isolation --no-deps --force-reinstall '.[spark,ui]'; \
       fi \
    && python -c 'import stormpy._native as n; assert n.COMPILED, n.PURE_REASON' \
    && rm -rf build /tmp/native \
    && ln -s "$(python -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')" /opt/spark
COPY examples ./examples
COPY docker/stormpy.yaml /etc/stormpy/stormpy.yaml

ENV STORMPY_CONF=/etc/stormpy/stormpy.yaml \
    PYTHONUNBUFFERED=1 \
    SPARK_HOME=/opt/spark \
    PYSPARK_PYTHON=/opt/venv/bin/python
USER stormpy
# /var/lib/stormpy: the local state and the daemons' logs (storm.local.dir, logs in its logs/);
# docker-compose.yml mounts a named volume there for each service
# 8080: the stormpy UI (the Spark master's own web UI is moved to 8081 in docker-compose.yml)
EXPOSE 6627 6700 6701 6702 6703 8080
ENTRYPOINT ["stormpy"]
CMD ["--help"]
