"""Every ``python -m clevr_poc <command> --help`` text reads as written: an example split over two lines
with a trailing backslash stays two lines (a single ``\\`` at the end of a line inside a Python string
joins the lines, leaving a run of spaces inside one command)."""

from __future__ import annotations

import re

import pytest

from clevr_poc.commands.main import build_parser

PARSER = build_parser()
COMMANDS = sorted(next(a for a in PARSER._actions if a.__class__.__name__ == "_SubParsersAction").choices.items())


@pytest.mark.parametrize("name, parser", COMMANDS, ids=[name for name, _ in COMMANDS])
def test_help_has_no_joined_example_lines(name, parser):
    text = parser.format_help()
    joined = [line for line in text.splitlines() if re.search(r"\S {4,}--[a-z]", line)]
    assert joined == [], f"{name} --help: {joined}"


def test_the_evaluate_example_keeps_its_continuation_line():
    text = dict(COMMANDS)["evaluate"].format_help()
    assert "--query llm --backend local \\\n      --limit 100 --checkpoint llm-parser.jsonl" in text
