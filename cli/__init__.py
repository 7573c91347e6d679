"""The `idemdash` command line: one module per group of commands, each loaded only when its command runs.

Loading lazily (click's documented pattern) keeps each command to what it needs: `migrate`, `purge`, `check`
and `scheduler` never load the web app or Flask; `serve` and `demo` do.
"""

from __future__ import annotations

import importlib
import logging

import click

# command name -> "module:function" in this package
COMMANDS = {
    "demo": "idemdash.cli.workload:demo",
    "migrate": "idemdash.cli.database:migrate",
    "init-app-schema": "idemdash.cli.database:init_app_schema",
    "check": "idemdash.cli.check:check",
    "detect": "idemdash.cli.detect:detect",
    "purge": "idemdash.cli.jobs:purge",
    "scheduler": "idemdash.cli.jobs:scheduler",
    "serve": "idemdash.cli.web:serve",
    "hash-password": "idemdash.cli.web:hash_password",
    "simulate": "idemdash.cli.workload:simulate",
}


class LazyGroup(click.Group):
    """Resolves a command by importing its module on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module, _, attribute = COMMANDS[cmd_name].partition(":")
        return getattr(importlib.import_module(module), attribute)


@click.group(cls=LazyGroup)
@click.version_option(package_name="idemdash", message="%(prog)s %(version)s")
@click.option("-v", "--verbose", is_flag=True, help="Log debug detail.")
def main(verbose: bool) -> None:
    """idemdash: dashboard and job runner for PostgreSQL idempotency keys, inbox and outbox."""
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
