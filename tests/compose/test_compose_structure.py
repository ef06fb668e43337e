"""Structural checks of compose.yaml and the Dockerfile.

No Docker engine runs where these tests run, so `docker compose up` cannot prove the stack starts; these
tests pin the properties whose breakage would only show up there: a service that never becomes healthy
because it waits on the wrong condition, a port exposed beyond loopback, an API started without its database
or Spark endpoint.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
COMPOSE_PATH = REPO_ROOT / "compose.yaml"
DOCKERFILE_PATH = REPO_ROOT / "Dockerfile"
DOCKERIGNORE_PATH = REPO_ROOT / ".dockerignore"
SPARK_DOCKERFILE_PATH = REPO_ROOT / "spark.Dockerfile"

# Default ports, as in strata_core.config.Settings.
API_PORTS = {"planner-api": 8001, "indexer-api": 8002, "query-api": 8003}
SERVED_PORTS = {"proxy": 8000, **API_PORTS}
# The further replicas of each API, reached only through the proxy: service -> the API it serves.
REPLICAS = {"planner-api-2": "planner-api", "indexer-api-2": "indexer-api", "query-api-2": "query-api"}
API_SERVICES = sorted([*API_PORTS, *REPLICAS])
# The proxy's list of each API's replicas.
UPSTREAM_VARIABLES = {"planner-api": "STRATA_PLANNER_UPSTREAMS", "indexer-api": "STRATA_INDEXER_UPSTREAMS",
                      "query-api": "STRATA_QUERY_UPSTREAMS"}
ONE_SHOT_SERVICES = {"migrate"}
STRATA_SERVICES = set(SERVED_PORTS) | set(REPLICAS) | ONE_SHOT_SERVICES
REQUIRED_SERVICES = {"postgres", "spark-connect"} | STRATA_SERVICES
API_ENV_VARS = ("STRATA_DATABASE_URL", "STRATA_SPARK_REMOTE", "STRATA_STORAGE_URI", "STRATA_API_KEYS")
VALID_CONDITIONS = {"service_started", "service_healthy", "service_completed_successfully"}

Services = dict[str, dict[str, Any]]


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    assert COMPOSE_PATH.is_file(), f"{COMPOSE_PATH} is missing"
    doc = yaml.safe_load(COMPOSE_PATH.read_text())
    assert isinstance(doc, dict), "compose.yaml must be a mapping"
    assert isinstance(doc.get("services"), dict), "compose.yaml has no `services` mapping"
    return doc


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> Services:
    return compose["services"]


def _service(services: Services, name: str) -> dict[str, Any]:
    assert name in services, f"service {name!r} is missing from compose.yaml"
    return services[name]


def _command(service: dict[str, Any]) -> list[str]:
    command = service.get("command")
    if command is None:
        return []
    if isinstance(command, str):
        return shlex.split(command)
    return [str(part) for part in command]


def _depends_on(service: dict[str, Any]) -> dict[str, str]:
    """Both compose spellings, as {target: condition}; the list form means `service_started`."""
    raw = service.get("depends_on") or {}
    if isinstance(raw, list):
        return {name: "service_started" for name in raw}
    return {name: (spec or {}).get("condition", "service_started") for name, spec in raw.items()}


def _environment(service: dict[str, Any]) -> dict[str, str | None]:
    raw = service.get("environment") or {}
    if isinstance(raw, list):
        env: dict[str, str | None] = {}
        for item in raw:
            key, sep, value = str(item).partition("=")
            env[key] = value if sep else None
        return env
    return {key: None if value is None else str(value) for key, value in raw.items()}


def _published_ports(service: dict[str, Any]) -> list[tuple[str | None, int | None, int]]:
    """(host_ip, published, target) for every port, from the short or the long syntax."""
    result: list[tuple[str | None, int | None, int]] = []
    for entry in service.get("ports") or []:
        if isinstance(entry, dict):
            published = entry.get("published")
            result.append(
                (entry.get("host_ip"), None if published is None else int(published), int(entry["target"]))
            )
            continue
        spec = str(entry).split("/", 1)[0]
        parts = spec.rsplit(":", 2)
        if len(parts) == 3:
            result.append((parts[0].strip("[]"), int(parts[1]), int(parts[2])))
        elif len(parts) == 2:
            result.append((None, int(parts[0]), int(parts[1])))
        else:
            # A bare container port is published on a random port of every host interface.
            result.append((None, None, int(parts[0])))
    return result


def _volume_mounts(service: dict[str, Any]) -> dict[str, str]:
    """{container path: source} for every mount, short or long syntax."""
    mounts: dict[str, str] = {}
    for entry in service.get("volumes") or []:
        if isinstance(entry, dict):
            mounts[entry["target"]] = entry.get("source", "")
            continue
        source, _, rest = str(entry).partition(":")
        target = rest.split(":", 1)[0]
        mounts[target] = source
    return mounts


def _healthcheck_text(service: dict[str, Any]) -> str:
    test = (service.get("healthcheck") or {}).get("test")
    if isinstance(test, list):
        return " ".join(str(part) for part in test)
    return str(test or "")


def test_every_required_service_is_defined(services: Services) -> None:
    missing = REQUIRED_SERVICES - set(services)
    assert not missing, f"compose.yaml lacks services: {sorted(missing)}"


@pytest.mark.parametrize("name", sorted(REQUIRED_SERVICES))
def test_service_has_image_or_build(services: Services, name: str) -> None:
    service = _service(services, name)
    assert service.get("image") or service.get("build"), f"{name} has neither `image` nor `build`"


def _instructions(path: Path) -> list[str]:
    """A Dockerfile's instructions, continuation lines joined, comments dropped."""
    text = path.read_text().replace("\\\n", " ")
    return [" ".join(line.split()) for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]


def _locked_version(package: str) -> str:
    lock = (REPO_ROOT / "uv.lock").read_text()
    marker = f'[[package]]\nname = "{package}"\nversion = "'
    start = lock.index(marker) + len(marker)
    return lock[start:lock.index('"', start)]


def test_spark_connect_builds_the_strata_spark_image(services: Services) -> None:
    build = _service(services, "spark-connect").get("build") or {}
    assert build.get("dockerfile") == "spark.Dockerfile", f"spark-connect build is {build!r}"
    assert SPARK_DOCKERFILE_PATH.is_file(), f"{SPARK_DOCKERFILE_PATH} is missing"


def test_spark_image_is_official_spark_4_1_1_on_java_17_with_stratas_python() -> None:
    instructions = _instructions(SPARK_DOCKERFILE_PATH)
    args = {line.split()[1].split("=")[0]: line.split("=", 1)[1] for line in instructions
            if line.startswith("ARG ") and "=" in line}
    # The bare 4.1.1 tag is the Java 21 build: the variant has to be named.
    assert args["SPARK_IMAGE"].startswith("apache/spark:4.1.1-") and "java17" in args["SPARK_IMAGE"], args
    froms = [line for line in instructions if line.startswith("FROM ")]
    assert froms == ["FROM ${SPARK_IMAGE} AS spark", "FROM python:3.11-slim"], froms
    # The same interpreter as the Strata image: the job bundle's native code is built for it.
    assert _instructions(DOCKERFILE_PATH)[0] == "FROM python:3.11-slim"
    copies = [line for line in instructions if line.startswith("COPY --from=spark")]
    assert "COPY --from=spark /opt/spark /opt/spark" in copies, copies
    assert "COPY --from=spark /opt/java/openjdk /opt/java/openjdk" in copies, copies


def test_spark_image_has_what_executors_need_at_the_locked_versions() -> None:
    instructions = _instructions(SPARK_DOCKERFILE_PATH)
    args = {line.split()[1].split("=")[0]: line.split("=", 1)[1] for line in instructions
            if line.startswith("ARG ") and "=" in line}
    for package in ("pyarrow", "numpy", "pandas"):
        assert args[f"{package.upper()}_VERSION"] == _locked_version(package), package
        assert any(line.startswith("RUN pip install") and f'"{package}==${{{package.upper()}_VERSION}}"' in line
                   for line in instructions), f"{package} is not installed"
    env = " ".join(line for line in instructions if line.startswith("ENV "))
    assert "PYSPARK_PYTHON=/usr/local/bin/python3.11" in env
    assert args["SPARK_UID"] == "185" and instructions[-3] == "USER spark", instructions[-3:]


def test_spark_connect_runs_in_foreground_on_all_interfaces(services: Services) -> None:
    service = _service(services, "spark-connect")
    command = _command(service)
    assert command[:1] == ["/opt/spark/sbin/start-connect-server.sh"], f"spark-connect command is {command}"
    joined = " ".join(command)
    assert "spark.connect.grpc.binding.address=0.0.0.0" in joined, "Spark Connect would bind loopback only"
    assert "spark.connect.grpc.binding.port=15002" in joined, "Spark Connect port is not pinned to 15002"
    assert str(_environment(service).get("SPARK_NO_DAEMONIZE", "")).lower() == "true", (
        "without SPARK_NO_DAEMONIZE the start script forks and the container exits"
    )
    assert ("127.0.0.1", 15002, 15002) in _published_ports(service), "15002 is not published on 127.0.0.1"
    assert "spark.pyspark.python=/usr/local/bin/python3.11" in joined, "executors would not run the image's Python"


@pytest.mark.parametrize("name", sorted(SERVED_PORTS))
def test_default_port_published_on_loopback(services: Services, name: str) -> None:
    port = SERVED_PORTS[name]
    ports = _published_ports(_service(services, name))
    assert ("127.0.0.1", port, port) in ports, (
        f"{name} does not publish 127.0.0.1:{port}:{port} (has {ports})"
    )


def test_query_api_publishes_its_flight_sql_port_on_loopback(services: Services) -> None:
    from strata_core.config import Settings

    port = Settings.model_fields["flight_port"].default
    assert ("127.0.0.1", port, port) in _published_ports(_service(services, "query-api"))


@pytest.mark.parametrize("name", sorted(REQUIRED_SERVICES))
def test_no_port_published_beyond_loopback(services: Services, name: str) -> None:
    for host_ip, published, target in _published_ports(_service(services, name)):
        assert host_ip == "127.0.0.1", (
            f"{name} publishes {published}->{target} on {host_ip or 'every interface'}"
        )


@pytest.mark.parametrize("name", sorted(REQUIRED_SERVICES - ONE_SHOT_SERVICES))
def test_long_running_service_has_healthcheck(services: Services, name: str) -> None:
    healthcheck = _service(services, name).get("healthcheck")
    assert healthcheck, f"{name} has no healthcheck"
    assert not healthcheck.get("disable"), f"{name} disables its healthcheck"
    test = healthcheck.get("test")
    assert test and test != ["NONE"], f"{name} healthcheck has no test"


@pytest.mark.parametrize("name", sorted(SERVED_PORTS))
def test_strata_healthcheck_probes_own_healthz_without_curl(services: Services, name: str) -> None:
    text = _healthcheck_text(_service(services, name))
    url = f"http://127.0.0.1:{SERVED_PORTS[name]}/healthz"
    assert url in text, f"{name} healthcheck does not probe {url}: {text!r}"
    assert "urllib" in text, (
        f"{name} healthcheck should use python's urllib (slim image has no curl): {text!r}"
    )


def test_infrastructure_healthchecks_probe_the_right_thing(services: Services) -> None:
    assert "pg_isready" in _healthcheck_text(_service(services, "postgres"))
    assert "15002" in _healthcheck_text(_service(services, "spark-connect"))


@pytest.mark.parametrize("name", sorted(ONE_SHOT_SERVICES))
def test_one_shot_service_is_not_restarted(services: Services, name: str) -> None:
    # `completed_successfully` waits forever on a service that compose keeps restarting.
    assert str(_service(services, name).get("restart", "no")) == "no", f'{name} must have restart: "no"'


def test_depends_on_targets_exist_and_conditions_are_satisfiable(services: Services) -> None:
    for name, service in services.items():
        for target, condition in _depends_on(service).items():
            assert target in services, f"{name} depends on undefined service {target!r}"
            assert condition in VALID_CONDITIONS, f"{name} -> {target} has unknown condition {condition!r}"
            if condition == "service_healthy":
                assert services[target].get("healthcheck"), (
                    f"{name} waits for {target} to be healthy, but {target} has no healthcheck"
                )
            if condition == "service_completed_successfully":
                assert str(services[target].get("restart", "no")) == "no", (
                    f"{name} waits for {target} to exit, but {target} is restarted"
                )


@pytest.mark.parametrize("name", API_SERVICES)
def test_api_waits_for_database_spark_and_migrations(services: Services, name: str) -> None:
    edges = _depends_on(_service(services, name))
    assert edges.get("postgres") == "service_healthy", f"{name}: postgres edge is {edges.get('postgres')}"
    assert edges.get("spark-connect") == "service_healthy", (
        f"{name}: spark-connect edge is {edges.get('spark-connect')}"
    )
    assert edges.get("migrate") == "service_completed_successfully", (
        f"{name}: migrate edge is {edges.get('migrate')}"
    )


def test_migrate_waits_for_healthy_postgres(services: Services) -> None:
    assert _depends_on(_service(services, "migrate")).get("postgres") == "service_healthy"


def test_proxy_waits_for_healthy_query_api(services: Services) -> None:
    assert _depends_on(_service(services, "proxy")).get("query-api") == "service_healthy"


def test_depends_on_graph_is_acyclic(services: Services) -> None:
    graph = {name: list(_depends_on(service)) for name, service in services.items()}
    visiting: list[str] = []
    done: set[str] = set()

    def visit(node: str) -> None:
        if node in done:
            return
        if node in visiting:
            cycle = visiting[visiting.index(node) :] + [node]
            pytest.fail(f"depends_on cycle: {' -> '.join(cycle)}")
        visiting.append(node)
        for target in graph.get(node, []):
            visit(target)
        visiting.pop()
        done.add(node)

    for name in graph:
        visit(name)


@pytest.mark.parametrize("name", sorted(SERVED_PORTS))
def test_strata_service_runs_strata_serve_on_its_port(services: Services, name: str) -> None:
    command = _command(_service(services, name))
    assert command[:3] == ["strata", "serve", name], f"{name} command is {command}"
    port = str(SERVED_PORTS[name])
    assert "--port" in command and command[command.index("--port") + 1] == port, (
        f"{name} is not on port {port}"
    )
    # The container's own loopback is unreachable through a published port.
    assert "--host" in command and command[command.index("--host") + 1] == "0.0.0.0", (
        f"{name} does not listen on 0.0.0.0: {command}"
    )


def test_migrate_runs_strata_migrate(services: Services) -> None:
    assert _command(_service(services, "migrate")) == ["strata", "migrate"]


def _build_dockerfile(build: Any) -> Path:
    if isinstance(build, str):
        return (REPO_ROOT / build / "Dockerfile").resolve()
    context = REPO_ROOT / str(build.get("context", "."))
    return (context / str(build.get("dockerfile", "Dockerfile"))).resolve()


def test_dockerfile_exists() -> None:
    assert DOCKERFILE_PATH.is_file(), f"{DOCKERFILE_PATH} is missing"


def test_services_that_build_use_the_root_dockerfile(services: Services) -> None:
    builders = {name: service["build"] for name, service in services.items()
                if service.get("build") and name in STRATA_SERVICES}
    assert builders, "no service builds the Strata image"
    for name, build in builders.items():
        assert _build_dockerfile(build) == DOCKERFILE_PATH.resolve(), f"{name} builds from {build!r}"


def test_strata_services_build_one_image(services: Services) -> None:
    unbuilt = sorted(name for name in STRATA_SERVICES if not _service(services, name).get("build"))
    assert not unbuilt, f"these Strata services do not build the Strata image: {unbuilt}"
    images = {name: services[name].get("image") for name in STRATA_SERVICES}
    assert len(set(images.values())) == 1, f"Strata services use several image names: {images}"


def test_dockerfile_syncs_the_locked_workspace_as_non_root() -> None:
    lines = [line.strip() for line in DOCKERFILE_PATH.read_text().splitlines()]
    instructions = [line for line in lines if line and not line.startswith("#")]
    assert instructions[0] == "FROM python:3.11-slim", f"base image is {instructions[0]!r}"
    sync = [line for line in instructions if "uv sync" in line]
    assert sync and all("--frozen" in line and "--no-dev" in line for line in sync), f"uv sync lines: {sync}"
    for member in ("shared", "planner-api", "indexer-api", "query-api", "spark-jobs", "services"):
        assert any(line.startswith(f"COPY {member}/ ") for line in instructions), f"{member}/ is not copied"
    assert any(line.startswith("COPY") and "uv.lock" in line for line in instructions), (
        "uv.lock is not copied"
    )
    users = [line.split(None, 1)[1] for line in instructions if line.startswith("USER ")]
    assert users and users[-1] not in {"root", "0", "0:0"}, f"final USER is {users[-1:] or 'root (unset)'}"
    assert any("/app/.venv/bin" in line for line in instructions if line.startswith("ENV")), (
        ".venv not on PATH"
    )
    # The proxy, the three APIs, and query-api's Flight SQL.
    assert "EXPOSE 8000-8004" in instructions


def test_dockerignore_keeps_local_state_out_of_the_context() -> None:
    assert DOCKERIGNORE_PATH.is_file(), f"{DOCKERIGNORE_PATH} is missing"
    patterns = {line.strip() for line in DOCKERIGNORE_PATH.read_text().splitlines()}
    for required in (".venv", ".tools", ".strata", ".git", "bench/.data"):
        assert required in patterns, f".dockerignore does not exclude {required}"
    assert "uv.lock" not in patterns and "pyproject.toml" not in patterns, "the build needs the manifests"


@pytest.mark.parametrize("name", API_SERVICES)
def test_api_environment_names_database_spark_storage_and_keys(services: Services, name: str) -> None:
    service = _service(services, name)
    env = _environment(service)
    missing = [var for var in API_ENV_VARS if var not in env]
    assert not missing, f"{name} environment lacks {missing}"
    assert str(env["STRATA_DATABASE_URL"]).startswith("postgresql+asyncpg://"), env["STRATA_DATABASE_URL"]
    assert "@postgres:5432/" in str(env["STRATA_DATABASE_URL"]), (
        "database URL does not reach the postgres service"
    )
    assert env["STRATA_SPARK_REMOTE"] == "sc://spark-connect:15002", env["STRATA_SPARK_REMOTE"]
    # Keys come from the operator; a default in the file would ship the same key to every deployment.
    assert str(env["STRATA_API_KEYS"]).startswith("${STRATA_API_KEYS:?"), env["STRATA_API_KEYS"]
    assert env["STRATA_STORAGE_URI"] == "file:///data", env["STRATA_STORAGE_URI"]


@pytest.mark.parametrize("name", API_SERVICES)
def test_api_and_spark_share_the_object_volume(services: Services, name: str) -> None:
    # file:///data URIs written by a Spark job must name the same files inside the API containers.
    spark_source = _volume_mounts(_service(services, "spark-connect")).get("/data")
    api_source = _volume_mounts(_service(services, name)).get("/data")
    assert spark_source, "spark-connect mounts nothing at /data"
    assert api_source == spark_source, (
        f"{name} mounts {api_source!r} at /data, spark-connect mounts {spark_source!r}"
    )


def _serves(service: dict[str, Any]) -> str | None:
    """The API a service runs (`strata serve NAME`), if any."""
    command = _command(service)
    return command[2] if command[:2] == ["strata", "serve"] and len(command) > 2 else None


@pytest.mark.parametrize("api", sorted(API_PORTS))
def test_proxy_lists_exactly_the_replicas_of_each_api(services: Services, api: str) -> None:
    env = _environment(_service(services, "proxy"))
    listed = {url.strip() for url in str(env.get(UPSTREAM_VARIABLES[api]) or "").split(",") if url.strip()}
    running = {f"http://{name}:{API_PORTS[api]}" for name, service in services.items() if _serves(service) == api}
    assert len(running) >= 2, f"{api} runs as {sorted(running)}: one replica cannot be restarted without a gap"
    assert listed == running, f"the proxy lists {sorted(listed)} for {api}, compose runs {sorted(running)}"
    # One way to name them: a single-URL setting beside the list would leave it unclear which one the proxy uses.
    assert not {"STRATA_PLANNER_URL", "STRATA_INDEXER_URL"} & set(env), env


@pytest.mark.parametrize("name", sorted(REPLICAS))
def test_a_replica_is_its_apis_first_service_but_for_its_published_port(services: Services, name: str) -> None:
    first = dict(_service(services, REPLICAS[name]))
    replica = dict(_service(services, name))
    assert replica.pop("ports") == [], f"{name} publishes ports: two replicas cannot share a host port"
    first.pop("ports")
    assert replica == first


def test_proxy_waits_for_every_replica(services: Services) -> None:
    edges = _depends_on(_service(services, "proxy"))
    for name in API_SERVICES:
        assert edges.get(name) == "service_healthy", f"proxy -> {name} is {edges.get(name)}"


def _seconds(duration: str) -> float:
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
    for unit in ("ms", "s", "m", "h"):
        if duration.endswith(unit) and duration[: -len(unit)].replace(".", "", 1).isdigit():
            return float(duration[: -len(unit)]) * units[unit]
    raise AssertionError(f"not a compose duration: {duration!r}")


@pytest.mark.parametrize("name", API_SERVICES)
def test_docker_stop_outlasts_the_drain_and_the_graceful_shutdown(services: Services, name: str) -> None:
    from strata_core.config import Settings

    service = _service(services, name)
    env = _environment(service)
    defaults = Settings()
    grace = float(env.get("STRATA_DRAIN_GRACE_SECS") or defaults.drain_grace_secs)
    timeout = float(env.get("STRATA_SHUTDOWN_TIMEOUT_SECS") or defaults.shutdown_timeout_secs)
    # Docker's own default is 10 s, less than the drain and the shutdown together: SIGKILL would cut requests.
    stop = _seconds(str(service.get("stop_grace_period", "10s")))
    assert stop >= grace + timeout + 5, f"{name}: stop_grace_period {stop:g} s < {grace:g} + {timeout:g} s + 5 s"


def test_named_volumes_are_declared_and_used(compose: dict[str, Any], services: Services) -> None:
    declared = set(compose.get("volumes") or {})
    assert {"pgdata", "objects"} <= declared, f"top-level volumes are {sorted(declared)}"
    for name, service in services.items():
        for target, source in _volume_mounts(service).items():
            if source and not source.startswith((".", "/", "~")):
                assert source in declared, f"{name} mounts undeclared volume {source!r} at {target}"
    assert _volume_mounts(_service(services, "postgres")).get("/var/lib/postgresql/data") == "pgdata"
