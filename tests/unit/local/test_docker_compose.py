"""docker-compose.yml and the Dockerfile, checked without Docker: the services, that every
command is a real ``stormpy`` command line, and that ports agree with the config defaults."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import click
import pytest
import yaml

import stormpy.connectors.spark  # noqa: F401 - registers the spark.* config section
from stormpy.cli.main import cli
from stormpy.config import DEFAULTS
from stormpy.local._spark_cluster import MASTER_CLASS, WORKER_CLASS

ROOT = Path(__file__).resolve().parents[3]
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES: dict[str, Any] = COMPOSE["services"]
DOCKERFILE = (ROOT / "Dockerfile").read_text()
DAEMONS = ["nimbus", "nimbus2", "supervisor1", "supervisor2", "ui"]
SPARK = ["spark-master", "spark-worker"]


def image_conf() -> dict[str, Any]:
    """The stormpy.yaml the Dockerfile copies into the image."""
    match = re.search(r"^COPY\s+(\S+)\s+(/etc/stormpy/stormpy\.yaml)\s*$", DOCKERFILE, re.M)
    assert match, "the Dockerfile must copy a stormpy.yaml to /etc/stormpy/stormpy.yaml"
    assert re.search(r"STORMPY_CONF=/etc/stormpy/stormpy\.yaml", DOCKERFILE)
    return yaml.safe_load((ROOT / match.group(1)).read_text())


def entrypoint() -> list[str]:
    match = re.search(r"^ENTRYPOINT\s+(\[.*\])\s*$", DOCKERFILE, re.M)
    assert match, "the Dockerfile needs an exec-form ENTRYPOINT"
    return list(json.loads(match.group(1)))


def defaults(text: str) -> str:
    """``text`` with every ``${VAR:-default}`` as docker-compose reads it when VAR is unset."""
    return re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", text)


def published(service: str) -> dict[int, int]:
    out = {}
    for spec in SERVICES[service].get("ports", []):
        host, _, container = defaults(str(spec)).rpartition(":")
        out[int(container)] = int(host.rpartition(":")[2])  # "127.0.0.1:8080:8080" too
    return out


def exposed(service: str) -> list[int]:
    ports: list[int] = []
    for spec in SERVICES[service].get("expose", []):
        lo, _, hi = str(spec).partition("-")
        ports.extend(range(int(lo), int(hi or lo) + 1))
    return ports


def test_services_are_zookeeper_two_nimbuses_two_supervisors_the_ui_and_spark() -> None:
    assert set(SERVICES) == {"zookeeper", *DAEMONS, *SPARK}
    zookeeper = SERVICES["zookeeper"]
    assert zookeeper["build"]["context"] == "docker/zookeeper"
    assert defaults(zookeeper["build"]["args"]["BASE_IMAGE"]).startswith("zookeeper:")
    assert defaults(SERVICES["nimbus"]["build"]["args"]["BASE_IMAGE"]) == "python:3.11-slim"
    assert SERVICES["nimbus"]["build"]["context"] == "."
    for name in DAEMONS:
        assert SERVICES[name]["image"] == SERVICES["nimbus"]["image"], "daemons share one image"
        if name != "nimbus":
            assert "build" not in SERVICES[name], "the image is built once (by nimbus)"
    for name in ("nimbus", "nimbus2"):
        assert "zookeeper" in SERVICES[name]["depends_on"]
    for name in ("supervisor1", "supervisor2"):
        assert {"nimbus", "nimbus2"} <= set(SERVICES[name]["depends_on"])
    assert "nimbus" in SERVICES["ui"]["depends_on"]


def test_second_nimbus_is_a_standby_of_the_same_cluster() -> None:
    conf = image_conf()
    assert conf["nimbus.seeds"] == ["nimbus", "nimbus2"], "every Nimbus is a seed"
    assert "nimbus.host=nimbus2" in SERVICES["nimbus2"]["command"]
    assert SERVICES["nimbus2"]["hostname"] == "nimbus2"
    assert published("nimbus2") == {6627: 6628}
    volumes = [str(v).split(":")[0] for n in ("nimbus", "nimbus2") for v in SERVICES[n]["volumes"]]
    assert len(set(volumes)) == 2, "each Nimbus keeps its own bundle store"


def test_image_runs_the_stormpy_command() -> None:
    assert entrypoint() == ["stormpy"]
    assert "pip install" in DOCKERFILE


@pytest.mark.parametrize("service", DAEMONS)
def test_every_command_is_a_real_stormpy_command(service: str) -> None:
    argv = SERVICES[service]["command"]
    assert isinstance(argv, list) and argv, "use the exec form (a list) for commands"
    sub = argv[0]
    assert sub in cli.commands, f"{service}: 'stormpy {sub}' is not a stormpy command"
    command = cli.commands[sub]
    ctx = command.make_context(sub, list(argv[1:]), resilient_parsing=False)  # raises on bad options
    assert isinstance(ctx, click.Context)
    expected = {"nimbus": "nimbus", "nimbus2": "nimbus", "supervisor1": "supervisor",
                "supervisor2": "supervisor", "ui": "ui"}[service]
    assert sub == expected


def test_supervisors_advertise_their_own_service_name() -> None:
    for name in ("supervisor1", "supervisor2"):
        argv = SERVICES[name]["command"]
        assert f"supervisor.host={name}" in argv
        assert SERVICES[name]["hostname"] == name


def test_ports_agree_with_the_config_defaults() -> None:
    conf = image_conf()
    zk_port = DEFAULTS["storm.zookeeper.port"]
    assert conf["storm.zookeeper.port"] == zk_port == 2181
    assert published("zookeeper") == {zk_port: zk_port}
    assert conf["storm.zookeeper.servers"] == ["zookeeper"]
    nimbus_port = DEFAULTS["nimbus.thrift.port"]
    assert conf["nimbus.thrift.port"] == nimbus_port == 6627
    assert published("nimbus") == {nimbus_port: nimbus_port}
    assert conf["nimbus.host"] == SERVICES["nimbus"]["hostname"] == "nimbus"
    slots = DEFAULTS["supervisor.slots.ports"]
    assert conf["supervisor.slots.ports"] == slots == [6700, 6701, 6702, 6703]
    for name in ("supervisor1", "supervisor2"):
        assert exposed(name) == slots
    ui_port = DEFAULTS["ui.port"]
    assert conf["ui.port"] == ui_port == 8080
    assert published("ui") == {ui_port: ui_port}
    assert "ui.host=0.0.0.0" in SERVICES["ui"]["command"], "the UI must listen beyond its container"
    exposed_by_image = {int(p) for line in re.findall(r"^EXPOSE\s+(.*)$", DOCKERFILE, re.M)
                        for p in line.split()}
    assert {nimbus_port, ui_port, *slots} <= exposed_by_image
    assert re.search(r"pip install .*\[(\w+,)*ui(,\w+)*\]", DOCKERFILE), "the image needs the ui extra"


def test_every_config_key_is_a_known_key() -> None:
    conf = image_conf()
    unknown = sorted(k for k in conf if k not in DEFAULTS and k != "worker.bind.host")
    assert unknown == []


def test_spark_services_run_the_images_pyspark_launcher() -> None:
    assert re.search(r"pip install .*\[(\w+,)*spark(,\w+)*\]", DOCKERFILE), "the image needs the spark extra"
    assert "openjdk" in DOCKERFILE, "the image needs a Java runtime for Spark"
    assert re.search(r"^\s+SPARK_HOME=/opt/spark", DOCKERFILE, re.M)
    assert "ln -s" in DOCKERFILE and "/opt/spark" in DOCKERFILE
    for name in SPARK:
        service = SERVICES[name]
        assert service["image"] == SERVICES["nimbus"]["image"], "executors need the workers' Python"
        assert service["entrypoint"] == ["/opt/spark/bin/spark-class"]
        assert service["hostname"] == name
    master = SERVICES["spark-master"]["command"]
    assert master[0] == MASTER_CLASS
    assert master[master.index("--host") + 1] == "spark-master"
    port = int(master[master.index("--port") + 1])
    worker = SERVICES["spark-worker"]["command"]
    assert worker[0] == WORKER_CLASS and worker[-1] == f"spark://spark-master:{port}"
    assert worker[worker.index("--host") + 1] == "spark-worker"
    assert "spark-master" in SERVICES["spark-worker"]["depends_on"]
    # the supervisors' workers use it: spark.master in the image's config, master up first
    assert image_conf()["spark.master"] == f"spark://spark-master:{port}"
    for name in ("supervisor1", "supervisor2"):
        assert "spark-master" in SERVICES[name]["depends_on"]
    # the Spark master's web UI must not take the stormpy UI's published port
    webui = int(SERVICES["spark-master"]["command"][
        SERVICES["spark-master"]["command"].index("--webui-port") + 1])
    assert webui != DEFAULTS["ui.port"]
    assert published("spark-master") == {port: port, webui: webui}
    assert DEFAULTS["ui.port"] not in published("spark-master").values()


@pytest.mark.parametrize("service", sorted(SERVICES))
def test_every_service_has_a_health_check(service: str) -> None:
    check = SERVICES[service]["healthcheck"]
    assert check["test"][0] in ("CMD", "CMD-SHELL") and len(check["test"]) > 1
    assert check["interval"] and check["start_period"]


def test_the_image_runs_as_a_user_and_keeps_its_state_on_volumes() -> None:
    users = re.findall(r"^USER\s+(\S+)\s*$", DOCKERFILE, re.M)
    assert users and users[-1] not in ("root", "0"), "the daemons must not run as root"
    assert re.search(r"^ARG BASE_IMAGE=python:3\.11-slim$", DOCKERFILE, re.M)
    assert re.search(r"^FROM \$\{BASE_IMAGE\}$", DOCKERFILE, re.M)
    local = image_conf()["storm.local.dir"]
    declared = set(COMPOSE["volumes"])
    for name in [*DAEMONS, "spark-worker", "zookeeper"]:
        mounts = [str(v).split(":") for v in SERVICES[name]["volumes"]]
        assert all(source in declared for source, _ in mounts), f"{name}: named volumes only"
        if name in DAEMONS:
            assert [target for _, target in mounts] == [local]


def test_published_ports_can_be_moved_by_environment_variables() -> None:
    for name, service in SERVICES.items():
        for spec in service.get("ports", []):
            host_part = str(spec).rsplit(":", 1)[0]
            assert re.search(r"\$\{STORMPY_\w+_PORT:-\d+\}", host_part), f"{name}: {spec}"
