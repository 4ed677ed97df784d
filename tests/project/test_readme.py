"""The README's set-up commands are the ones CI runs."""
import re

from conftest import REPO


def readme_commands() -> list[str]:
    text = (REPO / "README.md").read_text()
    section = text.split("## Set up", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.*?)\n```", section, re.S)


def test_exactly_two_setup_commands():
    commands = readme_commands()
    assert len(commands) == 2 and all("\n" not in c for c in commands), commands


def test_ci_runs_the_readme_test_command():
    ci = (REPO / ".ci" / "run").read_text()
    assert readme_commands()[1] in ci.splitlines()


def test_example_command_names_a_bundled_model():
    first = readme_commands()[0]
    model = re.search(r"convert (\S+)", first).group(1)
    assert (REPO / model).exists()
