"""docs/control.md keeps its seven examples (each asserts what the text claims: targets reached,
the analytic minimum time, ...); test_docs_blocks.py runs them as written, with every page's."""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC = os.path.join(ROOT, "docs", "control.md")


def blocks():
    with open(DOC) as f:
        return re.findall(r"```python\n(.*?)```", f.read(), re.S)


def test_the_guide_has_its_examples():
    assert len(blocks()) >= 7
