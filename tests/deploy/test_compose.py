"""deploy/compose.yaml: two replicas of the image behind nginx. No Docker engine runs in CI, so
this checks what can be checked without one: the file's shape, that it builds this repo's
Dockerfile, that nginx proxies to the port the image exposes, and that the environment it sets
is a real setting of the app."""

from __future__ import annotations

import re

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
