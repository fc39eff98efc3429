"""docs/benchmarks.md's comparison-harness blocks are what bench/compare/docs_blocks.py renders
from the results files committed beside them (so the page cannot drift from its data), and
the renderer writes only between a block's markers."""
import json
import pathlib
import re
import shutil
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.append(str(ROOT / "bench" / "compare"))
import docs_blocks  # noqa: E402

PAGE = ROOT / "docs" / "benchmarks.md"


def _sources(page_text):
    """The results pages each block names, as JSON paths (a block's head links its run's page)."""
    out = []
    for key in ("classifier", "meta", "cz", "e2e", docs_blocks.TRANSFER):
        begin, end = docs_blocks.markers(key)
        block = page_text.split(begin, 1)[1].split(end, 1)[0]
        md = re.search(r"\]\((\.\./bench/results/[^)]+\.md)\)", block)
        assert md, f"block {key!r} names no results page"
        out.append((PAGE.parent / md.group(1)).resolve())
    return out


def test_the_page_is_its_results_files_rendered(tmp_path):
    text = PAGE.read_text()
    copy = tmp_path / "benchmarks.md"
    shutil.copy(PAGE, copy)
    # Oldest run first: a later run's block replaces an earlier one's, as on the page.
    for md in sorted(set(_sources(text)), key=lambda p: json.loads(p.with_suffix(".json").read_text())["meta"]["date"]):
        docs_blocks.update_page(json.loads(md.with_suffix(".json").read_text()), str(md), page=str(copy))
    assert copy.read_text() == text


def test_only_the_blocks_between_markers_change(tmp_path):
    results = json.loads((ROOT / "bench" / "results" / "AMD-EPYC-2c-2026-11-21.json").read_text())
    begin, end = docs_blocks.markers("cz")
    page = tmp_path / "p.md"
    page.write_text(f"# Top\n\nbefore\n{begin}\nold text\n{end}\nafter\n")
    written = docs_blocks.update_page(results, str(ROOT / "bench" / "results" / "AMD-EPYC-2c-2026-11-21.md"),
                                      page=str(page))
    assert written == ["cz"]
    text = page.read_text()
    assert text.startswith("# Top\n\nbefore\n" + begin + "\n") and text.endswith(end + "\nafter\n")
    assert "old text" not in text and "| dynamiqs Expm (jax.grad) | fwd+grad |" in text
