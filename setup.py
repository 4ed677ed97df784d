"""Maps the repository's top-level folders onto the nn2tosa namespace (see pyproject.toml)."""
from pathlib import Path

from setuptools import setup

ROOTS = {
    "nn2tosa": "nn2tosa",
    "nn2tosa.frontend": "frontend",
    "nn2tosa.passes": "passes",
    "nn2tosa.lowering": "lowering",
    "nn2tosa.schemas": "schemas",
}


def _packages() -> list[str]:
    here = Path(__file__).parent
    found = []
    for package, folder in ROOTS.items():
        for init in sorted((here / folder).rglob("__init__.py")):
            rel = init.parent.relative_to(here / folder)
            found.append(".".join([package, *rel.parts]))
    return found


setup(packages=_packages(), package_dir=ROOTS)
