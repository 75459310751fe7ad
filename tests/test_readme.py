"""README.md as a new user follows it: every command of its shell blocks either runs as written
(on a campaign folder this test makes with the fake target) or is skipped by one of the listed
rules; its test command is the one CI runs; every relative link of README.md and docs/ points to
a file (and heading) that exists."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"

#: fence info strings whose blocks are shell commands.
SHELL = frozenset({"sh", "bash", "shell", "console"})
#: fence info strings of blocks that are no commands (output, a folder listing, an excerpt).
NOT_COMMANDS = frozenset({"", "text", "markdown", "python", "json", "toml"})
#: (text in the command, why it does not run here): a command that matches one is skipped.
SKIP_RULES: tuple[tuple[str, str], ...] = (
    ("pip install", "installs packages (.ci/run follows the test command in a fresh venv)"),
    ("--hours", "runs for hours"),
    ("--against", "installs another build of the target from the package index"),
    ("optfuzz bisect", "installs the target's releases from the package index"),
)
#: subcommand -> the exit status the README documents for the folder this test makes.
EXIT_STATUS = {"replay": 1}  # "exit 1 while any still fails": the fake bugs are not fixed
#: options whose value is a file the command writes.
WRITES = ("-o", "--sarif", "--junitxml")
#: the campaign that makes the README's folder: the bugs whose bundles the README names.
CAMPAIGN = ("fuzz", "--target", "fake", "--passes", "bad-neg,raise", "--max-cases", "48",
            "--jobs", "1", "--reduce-seconds", "5", "--source", "generated", "--out", "crashes",
            "--quiet")


@dataclass(frozen=True)
class Command:
    """One command line of a README shell block."""

    line: str
    block: int  # index of its block among the README's shell blocks

    @property
    def skip_reason(self) -> str | None:
        """The reason of the first :data:`SKIP_RULES` rule it matches; None if it runs."""
        return next((why for text, why in SKIP_RULES if text in self.line), None)

    @property
    def argv(self) -> list[str]:
        """Its words, the trailing comment dropped."""
        return shlex.split(self.line, comments=True)


def _tokens(path: Path) -> list[Token]:
    return MarkdownIt("commonmark").parse(path.read_text())


def _fences(path: Path) -> list[Token]:
    return [t for t in _tokens(path) if t.type == "fence"]


def readme_commands() -> list[Command]:
    """Every command line of README.md's shell blocks, in order (comment lines dropped)."""
    commands = []
    blocks = [t for t in _fences(README) if t.info.strip() in SHELL]
    for index, block in enumerate(blocks):
        for line in block.content.splitlines():
            if line.strip() and not line.lstrip().startswith("#"):
                commands.append(Command(line.strip(), index))
    return commands


def _run_id(command: Command) -> str:
    return " ".join(command.argv)[:60]


RUNNABLE = [c for c in readme_commands() if c.skip_reason is None]


def test_every_block_is_shell_or_plainly_no_command():
    infos = {t.info.strip() for t in _fences(README)}
    assert infos <= SHELL | NOT_COMMANDS, infos - SHELL - NOT_COMMANDS


def test_every_command_runs_or_is_skipped_by_a_listed_rule_and_every_rule_is_used():
    commands = readme_commands()
    blocks = {c.block for c in commands}
    assert blocks == set(range(max(blocks) + 1))  # no shell block without a command
    used = {c.skip_reason for c in commands} - {None}
    assert used == {why for _, why in SKIP_RULES}, "a skip rule that no command needs"
    assert RUNNABLE, "README shows no command that runs here"
    for command in RUNNABLE:  # run as one argv: no shell syntax
        assert command.argv[0] == "optfuzz", command.line
        assert not set(command.argv) & {"&&", "||", "|", ";", ">"}, command.line


def test_the_test_command_is_the_one_ci_runs():
    ci = (ROOT / ".ci" / "run").read_text()
    [test] = [c for c in readme_commands() if "-m pytest" in c.line]
    steps = [shlex.split(step) for step in test.line.split("&&")]
    [install] = [s for s in steps if s[:2] == ["pip", "install"]]
    [pytest_run] = [s for s in steps if "pytest" in s]
    assert f"install --quiet -e {shlex.quote(install[-1])}" in ci
    assert "\n" + shlex.join(pytest_run) + "\n" in ci


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A working folder whose crashes/ holds a fake-target campaign with the bundles the
    README names."""
    cwd = tmp_path_factory.mktemp("readme")
    proc = subprocess.run([sys.executable, "-m", "fuzzer", *CAMPAIGN], cwd=cwd, env=_env(),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return cwd


def _env() -> dict[str, str]:
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return dict(os.environ, PYTHONPATH=path, COLUMNS="200", TERM="dumb", NO_COLOR="1")


def test_the_bundles_the_readme_names_are_what_its_campaign_makes(folder: Path):
    named = {m for c in readme_commands() for m in re.findall(r"crashes/([a-z-]+-[0-9a-f]{8})",
                                                               c.line)}
    assert named
    assert named <= {p.name for p in (folder / "crashes").iterdir()}


@pytest.mark.slow
@pytest.mark.parametrize("command", RUNNABLE, ids=_run_id)
def test_readme_command_runs_as_written(command: Command, folder: Path):
    argv = command.argv
    proc = subprocess.run([sys.executable, "-m", "fuzzer", *argv[1:]], cwd=folder, env=_env(),
                          capture_output=True, text=True, timeout=300)
    subcommand = next((a for a in argv[1:] if not a.startswith("-")), "")
    assert proc.returncode == EXIT_STATUS.get(subcommand, 0), proc.stdout + proc.stderr
    for option, value in zip(argv, argv[1:], strict=False):
        if option in WRITES:
            assert (folder / value).is_file(), f"{command.line}: wrote no {value}"


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as dashes."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    tokens = _tokens(path)
    return {_slug(tokens[i + 1].content) for i, t in enumerate(tokens) if t.type == "heading_open"}


def _links(path: Path) -> list[str]:
    hrefs = []
    for token in _tokens(path):
        for child in token.children or []:
            if child.type == "link_open":
                hrefs.append(str(child.attrs["href"]))
            elif child.type == "image":
                hrefs.append(str(child.attrs["src"]))
    return hrefs


DOCUMENTS = [README, *sorted((ROOT / "docs").rglob("*.md"))]


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_points_to_an_existing_file_and_heading(document: Path):
    broken = []
    for href in _links(document):
        if re.match(r"[a-z][a-z0-9+.-]*:", href):  # http:, https:, mailto: ...
            continue
        target, _, anchor = href.partition("#")
        path = (document.parent / target).resolve() if target else document
        if not path.exists():
            broken.append(f"{href}: no such file")
        elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
            broken.append(f"{href}: no such heading")
    assert not broken, broken


def test_docs_pages_are_each_reachable_from_the_readme():
    linked, todo = set(), [README]
    while todo:
        page = todo.pop()
        for href in _links(page):
            target = href.partition("#")[0]
            if target and not re.match(r"[a-z][a-z0-9+.-]*:", href):
                path = (page.parent / target).resolve()
                if path.suffix == ".md" and path.is_file() and path not in linked:
                    linked.add(path)
                    todo.append(path)
                elif path.is_dir() and (path / "README.md").is_file():
                    linked.add((path / "README.md").resolve())
    assert set(DOCUMENTS[1:]) <= linked, set(DOCUMENTS[1:]) - linked
