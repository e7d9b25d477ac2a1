"""deploy/compose.yaml: two replicas of the image behind nginx. No Docker engine runs in CI, so
this checks what can be checked without one: the file's shape, that it builds this repo's
Dockerfile, that nginx proxies to the port the image exposes, and that the environment it sets
is a real setting of the app."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from tests.conftest import ROOT

DEPLOY = ROOT / "deploy"


def _compose() -> dict:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text(encoding="utf-8"))


def test_two_replicas_of_this_repos_image():
    service = _compose()["services"]["explorer"]
    assert service["deploy"]["replicas"] == 2
    assert (DEPLOY / service["build"]["context"] / service["build"]["dockerfile"]).resolve() == ROOT / "Dockerfile"
    exposed = re.search(r"^EXPOSE (\d+)", (ROOT / "Dockerfile").read_text(encoding="utf-8"), re.M)
    assert exposed and service["expose"] == [exposed.group(1)]


def test_environment_names_real_settings():
    from app.settings import Settings

    prefix = Settings.model_config["env_prefix"]
    for name in _compose()["services"]["explorer"].get("environment", {}):
        assert name.startswith(prefix) and name[len(prefix) :].lower() in Settings.model_fields, name


def test_proxy_forwards_to_the_replicas():
    compose = _compose()
    proxy = compose["services"]["proxy"]
    assert "explorer" in proxy["depends_on"]
    conf = (DEPLOY / "nginx.conf").read_text(encoding="utf-8")
    port = compose["services"]["explorer"]["expose"][0]
    assert f"server explorer:{port}" in conf
    assert "proxy_pass http://explorer;" in conf
    listen = re.search(r"listen (\d+);", conf)
    assert listen and proxy["ports"] == [f"{listen.group(1)}:{listen.group(1)}"]
    assert conf.count("{") == conf.count("}")


def test_the_proxy_is_debians_nginx_on_the_apps_base():
    """The proxy image is built here (no registry needed beyond the base), from the same base as the app's."""
    compose = _compose()
    proxy, explorer = compose["services"]["proxy"], compose["services"]["explorer"]
    dockerfile = DEPLOY / proxy["build"]["context"] / proxy["build"]["dockerfile"]
    text = dockerfile.read_text(encoding="utf-8")
    assert proxy["build"]["args"]["BASE_IMAGE"] == explorer["build"]["args"]["BASE_IMAGE"]
    assert re.search(r"^FROM \$\{BASE_IMAGE\}$", text, re.M) and "apt-get install" in text and "nginx" in text
    assert "COPY nginx.conf /etc/nginx/nginx.conf" in text
    assert (dockerfile.parent / "nginx.conf").is_file()


def _dockerfile(service: dict) -> Path:
    return DEPLOY / service["build"]["context"] / service["build"]["dockerfile"]


def test_no_image_comes_from_a_registry():
    """Every service's image is built here from this repository's Dockerfiles on the one base (no Docker Hub: the
    base can be made with debootstrap, docs/DEPLOY.md); `image:` only names what was built."""
    services = _compose()["services"]
    base = services["explorer"]["build"]["args"]["BASE_IMAGE"]
    for name, service in services.items():
        assert "build" in service, f"{name} would be pulled from a registry"
        assert service["build"]["args"]["BASE_IMAGE"] == base, name
        text = _dockerfile(service).read_text(encoding="utf-8")
        assert set(re.findall(r"^FROM (\S+)", text, re.M)) == {"${BASE_IMAGE}"}, name  # every stage on the base
        assert "/" not in service["image"] and ":" not in service["image"], f"{name}: {service['image']}"


def test_the_database_is_debians_postgresql_shared_by_the_replicas():
    compose = _compose()
    database, explorer = compose["services"]["postgres"], compose["services"]["explorer"]
    dockerfile = _dockerfile(database)
    text = dockerfile.read_text(encoding="utf-8")
    assert "apt-get install" in text and re.search(r"install -y --no-install-recommends postgresql\b", text)
    assert "COPY postgres-entrypoint.sh " in text and (dockerfile.parent / "postgres-entrypoint.sh").is_file()
    # the volume is where the entrypoint makes the cluster
    pgdata = re.search(r"PGDATA=(\S+)", text)
    assert pgdata and database["volumes"] == [f"classes:{pgdata.group(1)}"] and "classes" in compose["volumes"]
    # healthy only once it takes TCP connections, and the replicas wait for that
    assert database["healthcheck"]["test"][:4] == ["CMD", "pg_isready", "-h", "127.0.0.1"]
    assert explorer["depends_on"]["postgres"] == {"condition": "service_healthy"}
    assert "ports" not in database  # reached on the compose network only
    # the replicas' URL names the user, password, port and database the entrypoint makes
    url = re.fullmatch(r"postgresql://([^:]+):([^@]+)@([^:]+):(\d+)/(\w+)", explorer["environment"]["TE_DATABASE_URL"])
    env = database["environment"]
    exposed = re.search(r"^EXPOSE (\d+)", text, re.M)
    assert url and exposed
    assert url.groups() == (env["POSTGRES_USER"], env["POSTGRES_PASSWORD"], "postgres", exposed.group(1),
                            env["POSTGRES_DB"])


def test_the_deploy_folders_context_holds_what_its_dockerfiles_copy():
    """deploy/ is the build context of the proxy and the database: its .dockerignore (an allowlist) keeps out the
    wheelhouse yet lets in every file their Dockerfiles copy."""
    allowed = {line[1:] for line in (DEPLOY / ".dockerignore").read_text(encoding="utf-8").splitlines()
               if line.startswith("!")}
    copied = set()
    for service in _compose()["services"].values():
        if service["build"]["context"] == ".":
            copied |= set(re.findall(r"^COPY (\S+) ", _dockerfile(service).read_text(encoding="utf-8"), re.M))
    assert copied == allowed == {"nginx.conf", "postgres-entrypoint.sh"}
