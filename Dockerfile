# One image for every daemon of the docker-compose cluster (nimbus, supervisors, ui, and the
# Spark master and worker, which run the installed PySpark's launcher: Spark executors need the
# same Python environment as the stormpy workers whose Spark bolts use them).
# The entry point is the `stormpy` command: `docker run stormpy:latest list --nimbus HOST:6627`.
FROM python:3.11-slim

WORKDIR /opt/stormpy
# gcc compiles the tuple path (mypyc, see setup.py); without it the install is pure Python
# a Java runtime for Spark (drivers in stormpy workers, the Spark master, worker and executors)
RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev \
        openjdk-17-jre-headless procps \
    && rm -rf /var/lib/apt/lists/*
COPY pyproject.toml setup.py README.md ./
COPY src ./src
RUN STORMPY_MYPYC=1 pip install --no-cache-dir '.[spark,ui]' && mkdir -p /var/lib/stormpy \
    && ln -s "$(python -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')" /opt/spark
COPY examples ./examples
COPY docker/stormpy.yaml /etc/stormpy/stormpy.yaml

ENV STORMPY_CONF=/etc/stormpy/stormpy.yaml \
    PYTHONUNBUFFERED=1 \
    SPARK_HOME=/opt/spark \
    PYSPARK_PYTHON=/usr/local/bin/python
# 8080: the stormpy UI (the Spark master's own web UI is moved to 8081 in docker-compose.yml)
EXPOSE 6627 6700 6701 6702 6703 8080
ENTRYPOINT ["stormpy"]
CMD ["--help"]
