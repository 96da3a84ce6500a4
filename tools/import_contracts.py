"""rl-core's own import-linter contract, for what import-linter's built-in contracts cannot say (``pyproject.toml``).

``type = rlcore_imports`` checks, in the files under ``paths`` (packages, and the tests and benchmarks that are none):

- no module imports another module's ``_private`` names (``from .collector import _to_tensor``);
- no file under ``public_only`` imports a private module of ``rlcore`` (``rlcore._kernel...``): plugins, their tests,
  the contrib examples and the benchmarks use the public API, ``rlcore``, ``rlcore.hookspecs`` and ``rlcore_testing``;
- every function-local import under ``lazy_listed`` says why it is deferred, on its line or the first line of its
  group: ``import torch  # (lazy: ...)``; an import deferred for no reason of its own would hide a cycle.

It reads the files with ``ast``: import-linter's graph holds packages only, and tests are no packages.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck


class RlcoreImportsContract(Contract):
    """See the module's docstring."""

    type_name = "rlcore_imports"

    paths = fields.ListField(subfield=fields.StringField())
    public_only = fields.ListField(subfield=fields.StringField())
    lazy_listed = fields.ListField(subfield=fields.StringField())

    def check(self, graph: object, verbose: bool) -> ContractCheck:
        problems: list[str] = []
        public_only = [Path(p) for p in self.public_only]  # type: ignore[attr-defined]
        lazy_listed = [Path(p) for p in self.lazy_listed]  # type: ignore[attr-defined]
        for path in _python_files(Path(p) for p in self.paths):  # type: ignore[attr-defined]
            source = path.read_text(encoding="utf-8")
            lines = source.splitlines()
            tree = ast.parse(source, str(path))
            local = {id(node) for function in ast.walk(tree) if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) for node in ast.walk(function)}
            for node in ast.walk(tree):
                if not isinstance(node, (ast.Import, ast.ImportFrom)):
                    continue
                where = f"{path}:{node.lineno}: {lines[node.lineno - 1].strip()}"
                modules = [alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == "rlcore":
                    modules += [f"rlcore.{alias.name}" for alias in node.names]
                if isinstance(node, ast.ImportFrom) and any(_private(a.name) and not _submodule(path, node, a.name) for a in node.names):
                    problems.append(f"{where}\n    imports a private name of another module")
                if _inside(path, public_only) and any(_private_of_rlcore(module) for module in modules):
                    problems.append(f"{where}\n    imports a private module of rl-core: use rlcore, rlcore.hookspecs or rlcore_testing")
                if id(node) in local and _inside(path, lazy_listed) and not _listed(lines, node.lineno):
                    problems.append(f"{where}\n    a function-local import without '# (lazy: why)': import it at the top, or say why it waits")
        return ContractCheck(kept=not problems, metadata={"problems": problems})

    def render_broken_contract(self, check: ContractCheck) -> None:
        from importlinter.application import output

        for problem in check.metadata["problems"]:
            output.print_error(problem)
            output.new_line()


def _python_files(roots: Iterator[Path]) -> Iterator[Path]:
    for root in roots:
        for path in sorted(root.rglob("*.py") if root.is_dir() else [root]):
            if not any(part.startswith(".") or part.endswith(".egg-info") or part == "build" for part in path.parts):
                yield path


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _submodule(path: Path, node: ast.ImportFrom, name: str) -> bool:
    """Whether ``from <package> import name`` (relative) imports a module of that package, which it may."""
    if not node.level:
        return False
    package = path.parents[node.level - 1].joinpath(*(node.module or "").split(".")) if node.module else path.parents[node.level - 1]
    return (package / f"{name}.py").is_file() or (package / name / "__init__.py").is_file()


def _private_of_rlcore(module: str) -> bool:
    parts = module.split(".")
    return parts[0] == "rlcore" and len(parts) > 1 and (_private(parts[1]) or parts[1] == "builtins")


def _inside(path: Path, roots: list[Path]) -> bool:
    return any(path == root or root in path.parents for root in roots)


def _listed(lines: list[str], lineno: int) -> bool:
    """Whether the import at ``lineno`` (1-based), or the first import of the group of lines it belongs to, says ``(lazy:``."""
    index = lineno - 1
    while True:
        if "(lazy:" in lines[index]:
            return True
        previous = lines[index - 1].strip() if index > 0 else ""
        if not previous.startswith(("import ", "from ")):
            return False
        index -= 1
