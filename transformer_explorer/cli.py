"""`transformer-explorer [serve|train|heads|export-site|db] ...` (serve is the default), also
`python -m transformer_explorer`.

The command line sits above the packages it starts: app (serve), training (train, heads) and static_site
(export-site), each imported when its command runs, so serving never loads the trainer or the recorder.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

from app.settings import Settings


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    from checkpoints.families import GGUF_FAMILIES, HF_FAMILIES  # the families the loaders read (their records)

    parser.add_argument("--host", help="interface to listen on (default 127.0.0.1; TE_HOST)")
    parser.add_argument("--port", type=int, help="port (default 8000; TE_PORT)")
    parser.add_argument("--device", help="torch device for the models, e.g. cpu or cuda (default cpu; TE_DEVICE)")
    parser.add_argument("--add-model", action="append", default=[], metavar="NAME=PATH",
                        help="serve a local checkpoint under NAME: this project's format, a Hugging Face directory "
                             f"({' / '.join(HF_FAMILIES)}) or a GGUF file ({' / '.join(GGUF_FAMILIES)}); "
                             "repeatable")
    parser.add_argument("--ollama", nargs="?", const="auto", metavar="DIR",
                        help="serve every supported model of the local Ollama store under its Ollama name "
                             "(DIR default: $OLLAMA_MODELS, else ~/.ollama/models); says which are skipped and why")
    parser.add_argument("--lmstudio", nargs="?", const="auto", metavar="DIR",
                        help="serve every supported GGUF file of LM Studio's models folder (DIR default: "
                             "~/.lmstudio/models, else ~/.cache/lm-studio/models)")
    parser.add_argument("--default-model", help="model used when a request names none (default tiny-gpt)")
    parser.add_argument("--workers", type=int, help="inference threads per process (default: the core count)")
    parser.add_argument("--processes", type=int, default=1,
                        help="server processes sharing the port (each loads the models; default 1)")
    parser.add_argument("--torch-threads", type=int, help="torch intra-op threads (default: torch's own)")
    parser.add_argument("--no-minilm", action="store_true", help="do not offer the minilm package model")
    parser.add_argument("--no-smollm2", action="store_true", help="do not offer the smollm2 package model")
    parser.add_argument("--cors-origin", action="append", default=[], metavar="ORIGIN",
                        help="allow cross-origin requests from ORIGIN (CORS is off by default); repeatable")
    parser.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"])


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="transformer-explorer", description="Watch a real Transformer think: serve the explorer, or train a model."
    )
    sub = parser.add_subparsers(dest="command")
    add_serve_arguments(sub.add_parser("serve", help="run the web server (the default command)"))
    train = sub.add_parser("train", help="train a model into a checkpoint directory", add_help=False)
    train.add_argument("-h", "--help", action="store_true")
    heads = sub.add_parser("heads", help="score a checkpoint's attention heads on named patterns", add_help=False)
    heads.add_argument("-h", "--help", action="store_true")
    site = sub.add_parser("export-site", help="record the lessons into a static site that opens from a file "
                                              "(docs/TEACHERS.md); takes serve's model options")
    site.add_argument("dir", help="the site's folder (new, empty, or a site written before)")
    add_serve_arguments(site)
    return parser


def settings_from(args: argparse.Namespace) -> Settings:
    """Environment (TE_*) first, then whatever the command line sets."""
    overrides: dict[str, Any] = {}
    for field in ("host", "port", "device", "default_model", "workers", "torch_threads"):
        value = getattr(args, field)
        if value is not None:
            overrides[field] = value
    if args.no_minilm:
        overrides["load_minilm"] = False
    if args.no_smollm2:
        overrides["load_smollm2"] = False
    if args.ollama is not None:
        overrides["ollama_models"] = args.ollama
    if args.lmstudio is not None:
        overrides["lmstudio_models"] = args.lmstudio
    if getattr(args, "processes", 1) > 1 and args.workers is None:  # the cores are shared by the processes too
        overrides["workers"] = max(1, (os.cpu_count() or 1) // args.processes)
    settings = Settings(**overrides)
    settings.add_models = [*settings.add_models, *args.add_model]
    settings.cors_origins = [*settings.cors_origins, *args.cors_origin]
    return settings


def serve(args: argparse.Namespace) -> int:
    from app.server import serve as run_server  # lazily: `train` and `heads` never need the web stack

    return run_server(settings_from(args), args.log_level, args.processes)


def train(argv: Sequence[str]) -> int:
    from training import train as training  # lazily: serving never needs the training code

    parser = argparse.ArgumentParser(prog="transformer-explorer train")
    training.add_arguments(parser)
    return int(training.main(parser.parse_args(list(argv))) or 0)


def heads(argv: Sequence[str]) -> int:
    from training import heads as head_table

    summary = (head_table.__doc__ or "").split("\n")[0]
    parser = argparse.ArgumentParser(prog="transformer-explorer heads", description=summary)
    head_table.add_arguments(parser)
    return head_table.run(parser.parse_args(list(argv)))


def export_site(args: argparse.Namespace) -> int:
    from pathlib import Path

    from app.server import configure_logging
    from static_site.export import export_with_settings  # lazily: serving never needs the recorder

    configure_logging("warning")
    return export_with_settings(Path(args.dir), settings_from(args))


def database(argv: Sequence[str]) -> int:
    """`transformer-explorer db upgrade`: the class database (TE_DATABASE_URL, else SQLite in TE_DATA_DIR) migrated
    to the newest; the server also does it when it starts."""
    parser = argparse.ArgumentParser(prog="transformer-explorer db", description=(database.__doc__ or "").strip())
    parser.add_argument("action", choices=["upgrade", "current"])
    args = parser.parse_args(list(argv))
    from classroom import database as db  # lazily: only this command needs it before the server starts

    settings = Settings()
    url = db.database_url(settings.database_url, settings.data_dir)
    engine = db.make_engine(url)
    if args.action == "upgrade":
        db.upgrade(engine)
    print(f"{engine.url.render_as_string(hide_password=True)}: revision {db.current_revision(engine) or 'none'}")
    engine.dispose()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "db":
        return database(argv[1:])
    if argv and argv[0] == "train":
        return train(argv[1:])
    if argv and argv[0] == "heads":
        return heads(argv[1:])
    if not argv or argv[0] not in ("serve", "export-site"):
        argv = ["serve", *argv]  # serve is the default command
    args = build_parser().parse_args(argv)
    return export_site(args) if args.command == "export-site" else serve(args)


if __name__ == "__main__":
    sys.exit(main())
