# One image for every stormpy daemon of the docker-compose cluster (nimbus, supervisors, ui).
# The entry point is the `stormpy` command: `docker run stormpy:latest list --nimbus HOST:6627`.
FROM python:3.11-slim

WORKDIR /opt/stormpy
# gcc compiles the tuple path (mypyc, see setup.py); without it the install is pure Python
RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*
COPY pyproject.toml setup.py README.md ./
COPY src ./src
RUN STORMPY_MYPYC=1 pip install --no-cache-dir '.[ui]' && mkdir -p /var/lib/stormpy
COPY examples ./examples
COPY docker/stormpy.yaml /etc/stormpy/stormpy.yaml

ENV STORMPY_CONF=/etc/stormpy/stormpy.yaml \
    PYTHONUNBUFFERED=1
EXPOSE 6627 6700 6701 6702 6703 8080
ENTRYPOINT ["stormpy"]
CMD ["--help"]
