#!/usr/bin/env bash
# Builds the documentation site (mkdocs.yml, docs/) in strict mode into site/ (ignored by git):
# any warning fails the build, such as a broken link or anchor, or an API name in a page or a
# docstring that no longer resolves. Needs the tools of requirements-docs.txt in the environment
# (pip install -r requirements-docs.txt); the API reference is read from the sources and
# _core.pyi, so the compiled extension need not be built. Extra arguments go to mkdocs build.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
if [ -x .venv/bin/python ]; then
  export PATH="$root/.venv/bin:$PATH"
fi
if ! python -c "import mkdocs, mkdocstrings_handlers.python, material" 2>/dev/null; then
  echo "the docs tools are missing: pip install -r requirements-docs.txt" >&2
  exit 1
fi
# Material prints a notice about MkDocs 2.0 on every build; it is not about this site.
export NO_MKDOCS_2_WARNING=1
python -m mkdocs build --strict --clean --site-dir "$root/site" "$@"
echo "docs built in site/ (open site/index.html)"
