"""The Python examples of the documentation run as printed.

Every ```python block of README.md and docs/python.md runs in a fresh
interpreter from the repository's root, so the pages cannot drift from the
package. A block that imports datatrove is skipped when datatrove is not
installed.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", ROOT / "docs" / "python.md"]


def blocks() -> list[tuple[str, int, str]]:
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for match in re.finditer(r"^```python\n(.*?)^```", text, flags=re.S | re.M):
            line = text.count("\n", 0, match.start()) + 1
            found.append((page.relative_to(ROOT).as_posix(), line, match.group(1)))
    return found


@pytest.mark.parametrize(("page", "line", "code"), blocks(), ids=lambda v: str(v) if not isinstance(v, str) or "\n" not in v else "")
def test_documented_example_runs(page: str, line: int, code: str) -> None:
    if "datatrove" in code and importlib.util.find_spec("datatrove") is None:
        pytest.skip("datatrove is not installed")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{page}:{line} failed:\n{done.stderr}"


def test_the_pages_have_examples() -> None:
    pages = {page for page, _, _ in blocks()}
    assert pages == {"README.md", "docs/python.md"}
