"""Transformer Explorer's entry points, above every other package (it may import them all; none imports it).

    cli.py       `transformer-explorer serve|train|heads|export-site` (pyproject's [project.scripts]) and
                 `python -m transformer_explorer` (__main__.py): parses the command line and starts app,
                 training or static_site, each lazily

The package carries the distribution's own name, so the importable Python API (issue 44) goes here too, beside
the command line. Importing the package loads nothing: each entry point imports what it runs.
"""
