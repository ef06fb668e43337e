"""The CLI's surface without a stack: every command and option explains itself in --help, --version answers,
and the table renderer every listing shares aligns what it is given."""

from __future__ import annotations

import argparse
import io
import subprocess
import sys

from strata_services.cli import build_parser
from strata_services.output import table


def _subcommands(parser: argparse.ArgumentParser, prefix: str = ""):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action.choices.items():
                yield f"{prefix}{name}", helps.get(name), sub
                yield from _subcommands(sub, f"{prefix}{name} ")


def test_every_command_and_option_has_help_text():
    missing = []
    for name, help_text, sub in _subcommands(build_parser()):
        if not help_text:
            missing.append(name)
        for action in sub._actions:
            if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            if not action.help and not action.choices:
                missing.append(f"{name} {'/'.join(action.option_strings) or action.dest}")
    assert not missing, f"no help text: {missing}"


def test_version_prints_the_package_version():
    out = subprocess.run([sys.executable, "-m", "strata_services.cli", "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.startswith("strata 0.")


def test_table_aligns_numbers_right_and_text_left_and_says_when_empty():
    out = io.StringIO()
    table([{"name": "a", "rows": 5}, {"name": "longer", "rows": 12345, "note": None}], ["name", "rows", "note"], out)
    assert out.getvalue().splitlines() == ["NAME      ROWS  NOTE",
                                           "a            5  -",
                                           "longer  12,345  -"]
    empty = io.StringIO()
    table([], ["name"], empty)
    assert empty.getvalue() == "(none)\n"
