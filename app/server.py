"""Run the web server: uvicorn with this app's protocol guards and logging, in one process or several.

`transformer-explorer serve` (transformer_explorer/cli.py) parses the command line into Settings and calls
serve(); tests and benchmarks start a server with the same server_options().
"""

from __future__ import annotations

import json
import logging
import os
import sys
from typing import Any

from app.settings import Settings

LOG_LEVEL_VARIABLE = "TE_LOG_LEVEL"
GRACEFUL_SHUTDOWN_S = 10  # hands `serve --log-level` to each of several server processes


def serve(settings: Settings, log_level: str, processes: int = 1) -> int:
    """Load the models, then serve until stopped; 2 when a model cannot be loaded (one clear line)."""
    import uvicorn

    from app.catalogue import build_registry
    from app.factory import create_app
    from app.registry import RegistryError

    configure_logging(log_level)
    try:
        registry = build_registry(settings)  # load here so a bad --add-model is one clear line
    except RegistryError as error:
        print(f"transformer-explorer: error: {error}", file=sys.stderr)
        return 2
    if processes > 1:
        # each process builds its own app from the environment: hand the settings over as TE_* variables
        os.environ.update({f"TE_{name.upper()}": json.dumps(value) if isinstance(value, list) else str(value)
                           for name, value in settings.model_dump(mode="json").items() if value is not None})
        os.environ[LOG_LEVEL_VARIABLE] = log_level  # each process sets up its own logging (access log too)
        uvicorn.run("app.server:app_from_environment", factory=True, workers=processes,
                    **server_options(settings, log_level))
        return 0
    uvicorn.run(create_app(settings, registry), **server_options(settings, log_level))
    return 0


def server_options(settings: Settings, log_level: str) -> dict[str, Any]:
    """uvicorn's options: the guarded protocol (app.http_guard), our own access log (app.middleware: it writes no
    client text), and X-Forwarded-For believed only from the proxies named in the settings."""
    from app.http_guard import GuardedHttpProtocol

    return {"host": settings.host, "port": settings.port, "log_level": log_level, "http": GuardedHttpProtocol,
            "access_log": False, "proxy_headers": settings.forwarded_allow_ips is not None,
            "forwarded_allow_ips": settings.forwarded_allow_ips,
            # a class's live event streams never end by themselves: on shutdown they are cut after this long (the
            # pages' EventSource reconnects), where uvicorn would otherwise wait for them forever
            "timeout_graceful_shutdown": GRACEFUL_SHUTDOWN_S}


def app_from_environment() -> Any:
    """The app of one of several server processes, configured by the TE_* variables `serve` exported."""
    from app.catalogue import build_registry
    from app.factory import create_app

    configure_logging(os.environ.get(LOG_LEVEL_VARIABLE, "info"))
    settings = Settings()
    return create_app(settings, build_registry(settings))


def configure_logging(level: str) -> None:
    logging.basicConfig(level=level.upper(), format="%(levelname)s: %(message)s")
