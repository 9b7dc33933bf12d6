# The two entry points of the README: `make run` and `make test`.
PYTHON ?= python3.11
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test lint docs zookeeper redis java kafka kinesalite chromium netns-tools docker images test-compose test-partitions bench bench-cluster clean mutate mutate-summary mutate-survivors \
        mutate-recheck fuzz

$(BIN)/python:
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "python3.11 is required"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# The tuple path is compiled with mypyc at install (setup.py); editing one of its modules
# (listed in src/stormpy/_native.py) makes the next make rebuild it.
NATIVE_SRC := $(shell sed -n 's/^    "stormpy\.\([a-z_.]*\)",$$/\1/p' src/stormpy/_native.py \
                | tr . / | sed 's|^|src/stormpy/|; s|$$|.py|')

$(STAMP): pyproject.toml setup.py $(NATIVE_SRC) | $(BIN)/python
	$(BIN)/pip install -q -e '.[dev,spark,kafka,kinesis,redis,bench,ui,docs]'
	touch $(STAMP)

## run: set up and run the flagship example in embedded local mode
run: $(STAMP) java
	$(BIN)/stormpy local examples flagship:topology --ttl 300 --idle-stop 2

## java: install a Java runtime (Spark needs one) when none is on PATH
java:
	@if ! command -v java >/dev/null 2>&1 && [ -z "$$JAVA_HOME" ]; then \
	  echo "installing a Java runtime (Debian package default-jre-headless) for Spark"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q default-jre-headless; \
	fi

## zookeeper: install Apache ZooKeeper (Debian package) when it is missing
zookeeper:
	@if [ -z "$$ZOOKEEPER_HOME" ] && [ ! -f /usr/share/java/zookeeper.jar ]; then \
	  echo "installing Apache ZooKeeper (Debian package zookeeper)"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q zookeeper; \
	fi

## redis: install Redis (Debian package redis-server) when redis-server is missing: the redis state
## provider's tests and `stormpy dev-redis` start it (never as a system service)
redis:
	@if [ -z "$$REDIS_SERVER" ] && ! command -v redis-server >/dev/null 2>&1; then \
	  echo "installing Redis (Debian package redis-server)"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q redis-server; \
	fi

## kafka: Apache Kafka (KRaft) for the Kafka tests and `stormpy dev-kafka`, in .tools/kafka: Maven copies
## org.apache.kafka:kafka_2.13 and its runtime dependencies (tools/kafka/pom.xml) into libs/, and the
## broker's log4j2 configuration goes to config/ (stormpy.local._apache_kafka starts it)
KAFKA_HOME  := .tools/kafka
KAFKA_STAMP := $(KAFKA_HOME)/libs/.installed
kafka: java $(KAFKA_STAMP) $(KAFKA_HOME)/config/log4j2.properties
$(KAFKA_STAMP): tools/kafka/pom.xml
	@if ! command -v mvn >/dev/null 2>&1; then \
	  echo "installing Maven (Debian package maven) to fetch Apache Kafka"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q maven; \
	fi
	rm -rf $(KAFKA_HOME)/libs
	mvn -q -B -f tools/kafka/pom.xml dependency:copy-dependencies -DincludeScope=runtime \
	    -DoutputDirectory=$(abspath $(KAFKA_HOME))/libs
	touch $@
$(KAFKA_HOME)/config/log4j2.properties: tools/kafka/log4j2.properties
	mkdir -p $(@D)
	cp $< $@

## kinesalite: a local Kinesis server (Node.js) for the resharding tests, in .tools/
KINESALITE := .tools/kinesalite/node_modules/kinesalite/cli.js
kinesalite: $(KINESALITE)
$(KINESALITE):
	@command -v npm >/dev/null 2>&1 || { echo "Node.js and npm are required for kinesalite"; exit 1; }
	npm install --silent --no-audit --no-fund --prefix .tools/kinesalite kinesalite@3.3.3

## chromium: install Chromium and its WebDriver (Debian packages) for the UI's browser tests
chromium:
	@if ! command -v chromedriver >/dev/null 2>&1 || \
	    ! { command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; }; then \
	  echo "installing Chromium and chromium-driver (Debian packages) for the UI browser tests"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q chromium chromium-driver; \
	fi

## netns-tools: install nftables (Debian package nftables) for the network-partition tests when
## `nft` is missing (`ip` comes with iproute2)
netns-tools:
	@if ! command -v nft >/dev/null 2>&1 || ! command -v ip >/dev/null 2>&1; then \
	  echo "installing nftables and iproute2 (Debian packages) for the partition tests"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q nftables iproute2; \
	fi

## docker: Docker (Debian packages docker.io and docker-compose) when missing, and dockerd started
## when no daemon answers (docker/ensure-docker.sh), for `make images` and the compose test
docker:
	@docker/ensure-docker.sh

## images: the images of docker-compose.yml (stormpy, shared by every stormpy and Spark service, and
## ZooKeeper), FROM the public python:3.11-slim and zookeeper:3.8 when they can be pulled, else FROM
## a local base image built from Debian packages (debootstrap, docker import; kept and reused:
## docker/base/build-base-images.sh). When this host fits the image (Linux, CPython 3.11) its
## build installs the wheels of this venv's versions (from pip's cache) and the tuple path `make`
## compiled here, staged in .build/docker (docker/stage-build.sh, beside the base image's build):
## nothing downloaded or compiled twice. Docker's layer cache makes a rebuild after a source change
## reinstall only stormpy.
images: docker | $(BIN)/python
	@docker/stage-build.sh $(BIN)/python .build/docker & staging=$$!; \
	  bases="$$(docker/base/build-base-images.sh)"; based=$$?; wait $$staging && [ $$based = 0 ] && \
	  eval "export $$bases" && echo "base images: $$bases" && docker-compose build zookeeper nimbus

## test-compose: only the docker-compose test (tests/compose: the cluster of docker-compose.yml up,
## the word count from the host, a supervisor killed, the leading Nimbus stopped, the Spark
## flagship, `down -v`); `make test` runs it too. See docs/testing.md.
test-compose: $(STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider tests/compose

## test-partitions: only the network-partition tests (tests/partitions: ZooKeeper, two Nimbus hosts
## and two supervisors in network namespaces; root on Linux; ~3 minutes). `make test` runs them too.
test-partitions: $(STAMP) zookeeper java netns-tools
	$(BIN)/python -m pytest -q -p no:cacheprovider tests/partitions

## test: set up (venv, ZooKeeper, Redis, Java, Apache Kafka, kinesalite, Chromium) and run every test,
## the docker-compose test included (tests/compose installs and starts Docker and builds the images
## through `make images` itself: a machine where Docker cannot run skips it, CI fails it)
test: $(STAMP) zookeeper redis java kafka kinesalite chromium netns-tools
	$(BIN)/ruff check src tests bench examples tools setup.py
	$(BIN)/mypy
	@mkdir -p .build && $(BIN)/mkdocs build > .build/mkdocs.log 2>&1 || { cat .build/mkdocs.log; exit 1; }
	$(BIN)/python -m pytest -q -p no:cacheprovider --durations=30
	@echo "unit tests again on the pure-Python tuple path (STORMPY_PURE=1):"
	STORMPY_PURE=1 $(BIN)/python -m pytest -q -p no:cacheprovider tests/unit

## docs: the documentation site (tutorial, how-to guides, the reference generated from the
## docstrings and the key table, design notes) into .build/site; --strict: a broken link or
## reference fails it (`make test` builds it too)
docs: $(STAMP)
	$(BIN)/mkdocs build
	@echo "open .build/site/index.html"

lint: $(STAMP)
	$(BIN)/ruff check src tests bench examples tools setup.py
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python -m bench

## bench-cluster: the cluster rows (2 stormpy workers against Bytewax with 2 processes), complete
## latency at 10,000 sentences/s and worker memory, on a local ZooKeeper + Nimbus + 2 supervisors
## (~10 minutes: kept out of `make bench`). See docs/performance.md.
bench-cluster: $(STAMP) zookeeper
	$(BIN)/python -m bench.cluster_bench

## soak: a reliable word count on ZooKeeper + Nimbus + 2 supervisors at a steady rate, one worker
## kill -9 every 10 minutes, every process's RSS/fds/threads and the znode count sampled each
## minute and checked flat; lost ids must be 0 (SOAK_MINUTES, default 120; kept out of `make test`).
## Writes soak-out/samples.csv, soak.png, summary.json. See docs/testing.md, "Soak".
SOAK_MINUTES ?= 120
.PHONY: soak
soak: $(STAMP) zookeeper
	$(BIN)/pip install -q matplotlib
	SOAK_MINUTES=$(SOAK_MINUTES) $(BIN)/python -m bench.soak --out soak-out

## scale: the many-host run (ZooKeeper, two Nimbuses, the UI and 100 supervisor processes, each
## on its own loopback address, running 50 idle topologies of 1 to 4 workers; ~9 GB, ~20 minutes
## on 2 cores: kept out of `make test`, whose short version runs 20 hosts under the `scale`
## marker). scale-sim: one real Nimbus and ZooKeeper with 1,000 fake supervisors and 5,000 fake
## workers (the daemons' own code paths: ZooKeeper, and heartbeats to Nimbus over RPC; no tuples). See docs/operations.md, "Sizing a
## cluster".
.PHONY: scale scale-sim
scale: $(STAMP) zookeeper
	$(BIN)/python -m bench.scale_hosts --supervisors 100 --topologies 50

scale-sim: $(STAMP) zookeeper
	$(BIN)/python -m bench.scale_sim --supervisors 1000 --slots 5 --topologies 250 --workers 20

## bench-peers: Apache Storm itself beside stormpy and Bytewax in one run: the README's word count
## in Java on Storm's LocalCluster and with a multilang Python split bolt (bench/peers/storm,
## built with Maven into its target/ when java and mvn are on PATH; without them the Storm rows
## are left out and the reason printed). ~10 minutes: kept out of `make bench`. See
## docs/performance.md, "Apache Storm itself".
.PHONY: bench-peers
bench-peers: $(STAMP)
	$(BIN)/python -m bench.peers

## mutate: mutation testing (mutmut) of the core modules, one after the other, then the score of
## each; MODULE=acker (or worker, nimbus, batching, spark-bolt, ...) for one. See docs/testing.md.
MODULE ?=
mutate: $(STAMP)
	$(BIN)/python tools/mutate.py run $(MODULE)

mutate-summary: $(STAMP)
	$(BIN)/python tools/mutate.py summary $(MODULE)

## mutate-survivors: the surviving mutants of MODULE (diffs), to judge or to write tests for
mutate-survivors: $(STAMP)
	$(BIN)/python tools/mutate.py survivors $(MODULE)

## mutate-recheck: run only MODULE's surviving mutants again (after adding tests)
mutate-recheck: $(STAMP)
	$(BIN)/python tools/mutate.py recheck $(MODULE)

## fuzz: coverage-guided fuzzing (atheris) of every decoder of outside input, one target after the
## other for FUZZ_SECONDS each (TARGET=rpc_frames for one); not part of `make test`. See docs/testing.md.
FUZZ_SECONDS ?= 120
TARGET ?=
fuzz: $(STAMP)
	@$(BIN)/python -c 'import atheris' 2>/dev/null || $(BIN)/pip install -q -e '.[fuzz]'
	$(BIN)/python tests/fuzz/run_fuzz.py --seconds $(FUZZ_SECONDS) $(TARGET)

clean:
	rm -rf $(VENV) build src/*.egg-info .tools .mutmut
