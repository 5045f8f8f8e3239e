"""Checks that the modules of each directory form layers: no module uses a sibling that uses it.

    python scripts/check_layers.py

Within a directory, the sibling modules are its files and its subdirectories, a subdirectory
counting as one module (all its files together). The directory's own module (``mod.rs``,
``lib.rs``, the ``x.rs`` beside a folder ``x/``, ``__init__.py``) is the top of the directory,
not a sibling: its children may use what it defines, and it uses them. A use is a path in Rust
code starting with ``crate::``, ``super::`` or ``self::`` (in a ``use``, its groups included,
or inline in code), resolved to the longest module prefix that exists, and in Python any
import of ``windowstore`` (absolute or relative, lazy ones in functions included). Rust's
``#[cfg(test)]`` items and ``tests.rs`` and ``tests/`` are not read, nor are comments.

Prints each cycle, the modules of a directory that use one another, with the uses that close
it (one place each), and exits 1 if there is any.
"""

from __future__ import annotations

import ast
import bisect
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUST_CRATES = ("crates/windowstore-core/src", "crates/windowstore-py/src")
PYTHON_SOURCE = "python"
PYTHON_PACKAGE = "windowstore"

#: A module's path from its crate's root (Rust) or the source folder (Python).
Module = tuple[str, ...]


@dataclass(frozen=True)
class Use:
    """One module using another, and the first place it does."""

    user: Module
    used: Module
    where: str


@dataclass
class Tree:
    """The modules of one crate or package, the folder they are in and their uses."""

    folder: Path
    modules: set[Module]
    uses: list[Use]

    def resolve(self, path: Module) -> Module:
        """The longest prefix of ``path`` that is a module."""
        while path and path not in self.modules:
            path = path[:-1]
        return path

    def directories(self) -> list[Module]:
        """The modules with modules below them, each a directory to check."""
        return sorted({m[:k] for m in self.modules for k in range(len(m))} & self.modules)


# Rust.

_RUST_SPECIAL = re.compile(r"//|/\*|\bb?r(#*)\"|\"|'")
_RUST_STRING_REST = re.compile(r'(?:[^"\\]|\\.)*"', re.DOTALL)
_RUST_CHAR = re.compile(r"'(?:\\(?:x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]+\}|.)|[^\\'\n])'")
_RUST_BLOCK_COMMENT = re.compile(r"/\*|\*/")
_RUST_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|::|\S")
_RUST_PATH_HEADS = ("crate", "super", "self")
_CFG_TEST = ["#", "[", "cfg", "(", "test", ")", "]"]


def _block_comment_end(text: str, start: int) -> int:
    depth = 0
    for m in _RUST_BLOCK_COMMENT.finditer(text, start):
        depth += 1 if m.group() == "/*" else -1
        if depth == 0:
            return m.end()
    return len(text)


def _literal_end(text: str, m: re.Match[str]) -> int:
    """Where the comment or literal that ``m`` opens ends (``m.start()`` if it opens none)."""
    opening = m.group()
    if opening == "//":
        end = text.find("\n", m.start())
        return len(text) if end < 0 else end
    if opening == "/*":
        return _block_comment_end(text, m.start())
    if opening == '"':
        rest = _RUST_STRING_REST.match(text, m.end())
        return rest.end() if rest else len(text)
    if opening == "'":
        char = _RUST_CHAR.match(text, m.start())
        return char.end() if char else m.start()  # a lifetime
    closing = '"' + m.group(1)
    end = text.find(closing, m.end())
    return len(text) if end < 0 else end + len(closing)


def strip_rust(text: str) -> str:
    """``text`` with its comments and string and char literals blanked, lines kept."""
    out: list[str] = []
    done = 0
    pos = 0
    while m := _RUST_SPECIAL.search(text, pos):
        end = _literal_end(text, m)
        if end == m.start():
            pos = m.end()
            continue
        out.append(text[done : m.start()])
        out.append(re.sub(r"[^\n]", " ", text[m.start() : end]))
        done = pos = end
    out.append(text[done:])
    return "".join(out)


@dataclass(frozen=True)
class Token:
    text: str
    line: int


def rust_tokens(text: str) -> list[Token]:
    """The tokens of Rust source, comments and literals left out, ending in a few ``;``."""
    code = strip_rust(text)
    starts = [0] + [i + 1 for i, c in enumerate(code) if c == "\n"]
    tokens = [
        Token(m.group(), bisect.bisect_right(starts, m.start())) for m in _RUST_TOKEN.finditer(code)
    ]
    return tokens + [Token(";", len(starts))] * 4


def _is_ident(text: str) -> bool:
    return text[0].isalpha() or text[0] == "_"


def _item_end(tokens: list[Token], i: int) -> int:
    """The index after the item that starts at ``i`` (its attributes included): after its
    ``;`` or its block, or at the end of the block around it (a field's)."""
    depth = 0
    for j in range(i, len(tokens)):
        text = tokens[j].text
        if text in "([{":
            depth += 1
        elif text in ")]}":
            if depth == 0:
                return j
            depth -= 1
            if depth == 0 and text == "}":
                return j + 1
        elif text == ";" and depth == 0:
            return j + 1
    return len(tokens)


def _use_tree(tokens: list[Token], i: int, prefix: list[str]) -> tuple[list[list[str]], int]:
    """The paths of the ``use`` tree at ``i`` under ``prefix``, and the index after it."""
    path = list(prefix)
    while True:
        text = tokens[i].text
        if text == "::":
            i += 1
        elif text == "{":
            paths: list[list[str]] = []
            i += 1
            while tokens[i].text not in ("}", ";"):
                inner, i = _use_tree(tokens, i, path)
                paths += inner
                i += tokens[i].text == ","
            return paths, i + 1
        elif _is_ident(text) and text != "as":
            path.append(text)
            i += 1
        else:
            if text == "as":
                i += 2
            return [path], i + (text == "*")


def _inline_path(tokens: list[Token], i: int) -> tuple[list[str], int]:
    """The path that starts at ``i`` (``super::kind::RunOutcome``), and the index after it."""
    path = [tokens[i].text]
    i += 1
    while tokens[i].text == "::" and _is_ident(tokens[i + 1].text):
        path.append(tokens[i + 1].text)
        i += 2
    return path, i


def _paths_at(tokens: list[Token], i: int) -> tuple[list[list[str]], int]:
    """The paths a ``use`` or an inline path at ``i`` names (none elsewhere), and the index
    after it."""
    text = tokens[i].text
    if text == "use":
        paths, end = _use_tree(tokens, i + 1, [])
        return [path for path in paths if path and path[0] in _RUST_PATH_HEADS], end
    if text in _RUST_PATH_HEADS and tokens[i + 1].text == "::":
        path, end = _inline_path(tokens, i)
        return [path], end
    return [], i + 1


def rust_paths(tokens: list[Token], module: Module) -> Iterator[tuple[Module, int]]:
    """The module paths the tokens of ``module``'s file name, each with its line, not yet
    shortened to a module; ``#[cfg(test)]`` items are skipped, inline modules followed."""
    here: list[tuple[str, int]] = []  # the inline modules around, with their brace depth
    depth = 0
    i = 0
    while i < len(tokens):
        text = tokens[i].text
        if [t.text for t in tokens[i : i + len(_CFG_TEST)]] == _CFG_TEST:
            i = _item_end(tokens, i + len(_CFG_TEST))
        elif text == "mod" and _is_ident(tokens[i + 1].text) and tokens[i + 2].text == "{":
            here.append((tokens[i + 1].text, depth))
            depth += 1
            i += 3
        elif text in "{}":
            depth += 1 if text == "{" else -1
            if here and here[-1][1] == depth:
                here.pop()
            i += 1
        else:
            current = module + tuple(name for name, _ in here)
            paths, end = _paths_at(tokens, i)
            for path in paths:
                yield _absolute(path, current), tokens[i].line
            i = end


def _absolute(path: list[str], here: Module) -> Module:
    """``path`` (``crate::``, ``super::`` or ``self::``) from the crate's root."""
    head, *rest = path
    base = () if head == "crate" else here[:-1] if head == "super" else here
    while rest and rest[0] == "super":
        base = base[:-1]
        rest = rest[1:]
    return base + tuple(name for name in rest if name != "self")


def rust_module(relative: Path) -> Module:
    """The module of a file, from its path below the crate's ``src``."""
    parts = relative.with_suffix("").parts
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return tuple(parts)


def rust_tree(src: Path) -> Tree:
    """The modules of the crate at ``src`` and their uses, tests left out."""
    files = {
        rust_module(path.relative_to(src)): path
        for path in sorted(src.rglob("*.rs"))
        if "tests" not in path.relative_to(src).with_suffix("").parts
    }
    tree = Tree(src, set(files), [])
    for module, path in files.items():
        tokens = rust_tokens(path.read_text(encoding="utf-8"))
        for target, line in rust_paths(tokens, module):
            where = f"{path.relative_to(ROOT)}:{line}"
            tree.uses.append(Use(module, tree.resolve(target), where))
    return tree


# Python.


def python_module(relative: Path) -> Module:
    """The module of a file, from its path below the source folder."""
    parts = relative.with_suffix("").parts
    return parts[:-1] if parts[-1] == "__init__" else parts


def python_imports(source: str, module: Module, package: bool) -> Iterator[tuple[Module, int]]:
    """The modules (or names in them) that ``source`` imports anywhere, each with its line."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield tuple(alias.name.split(".")), node.lineno
        elif isinstance(node, ast.ImportFrom):
            base: Module = ()
            if node.level:
                here = module if package else module[:-1]
                base = here[: len(here) - node.level + 1]
            base += tuple(node.module.split(".")) if node.module else ()
            for alias in node.names:
                yield (*base, alias.name), node.lineno


def python_tree(source: Path, package: str) -> Tree:
    """The modules of ``package`` (in the folder ``source``) and their uses of one another."""
    paths = sorted(
        path
        for suffix in ("*.py", "*.pyi")
        for path in (source / package).rglob(suffix)
        if "__pycache__" not in path.parts
    )
    files: dict[Module, Path] = {}
    for path in paths:  # a module's .py, if it has one, not its stub
        files.setdefault(python_module(path.relative_to(source)), path)
    tree = Tree(source, set(files), [])
    for module, path in files.items():
        imports = python_imports(path.read_text(encoding="utf-8"), module, path.stem == "__init__")
        for target, line in imports:
            if target[:1] == (package,):
                where = f"{path.relative_to(ROOT)}:{line}"
                tree.uses.append(Use(module, tree.resolve(target), where))
    return tree


# The check.


def sibling_uses(tree: Tree, directory: Module) -> dict[tuple[str, str], str]:
    """The uses between the siblings of ``directory``, each with the first place it is made."""
    depth = len(directory)
    edges: dict[tuple[str, str], str] = {}
    for use in tree.uses:
        inside = use.user[:depth] == directory == use.used[:depth]
        if inside and len(use.user) > depth and len(use.used) > depth:
            user, used = use.user[depth], use.used[depth]
            if user != used:
                edges.setdefault((user, used), use.where)
    return edges


def cycles(edges: Iterable[tuple[str, str]]) -> list[list[str]]:
    """The groups of two or more nodes that each reach every other one of their group."""
    graph: dict[str, set[str]] = {}
    for user, used in edges:
        graph.setdefault(user, set()).add(used)
        graph.setdefault(used, set())
    reach: dict[str, set[str]] = {}
    for start in graph:
        seen: set[str] = set()
        todo = [start]
        while todo:
            for nxt in graph[todo.pop()] - seen:
                seen.add(nxt)
                todo.append(nxt)
        reach[start] = seen
    groups = {
        tuple(sorted(other for other in reach[node] if node in reach[other]))
        for node in graph
        if node in reach[node]
    }
    return sorted(list(group) for group in groups)


def report(tree: Tree) -> tuple[int, int]:
    """Prints the cycles of every directory of ``tree``; the directories and the cycles."""
    count = 0
    directories = tree.directories()
    for directory in directories:
        edges = sibling_uses(tree, directory)
        for cycle in cycles(edges):
            count += 1
            folder = tree.folder.joinpath(*directory).relative_to(ROOT)
            print(f"{folder}: a cycle of {len(cycle)} modules: {', '.join(cycle)}")
            for (user, used), where in sorted(edges.items()):
                if user in cycle and used in cycle:
                    print(f"    {user} -> {used}  ({where})")
    return len(directories), count


def main() -> int:
    trees = [rust_tree(ROOT / src) for src in RUST_CRATES]
    trees.append(python_tree(ROOT / PYTHON_SOURCE, PYTHON_PACKAGE))
    directories = found = 0
    for tree in trees:
        checked, count = report(tree)
        directories += checked
        found += count
    if found:
        print(f"layers: {found} cycles in {directories} directories")
        return 1
    print(f"layers: no cycles in {directories} directories")
    return 0


if __name__ == "__main__":
    sys.exit(main())
