"""Every relative link in README.md and docs/ resolves: the file exists and, for a link into a
Markdown page with #anchor, the page has that heading (GitHub's anchors: the heading in lower
case, punctuation other than hyphens dropped, spaces as hyphens). Links inside code are not
links; links with a scheme (https:, mailto:) are not checked here (no network)."""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _prose(text):
    """The text without fenced code blocks and inline code spans."""
    return re.sub(r"`[^`\n]*`", "", re.sub(r"```.*?```", "", text, flags=re.S))


def anchors(page):
    seen = {}
    out = set()
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)  # (a heading's `code` keeps its text)
    for heading in re.findall(r"^#+\s+(.*?)\s*#*$", text, flags=re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")  # a repeated heading gets -1, -2, ...
    return out


def broken_links(page):
    bad = []
    for target in LINK.findall(_prose(page.read_text())):
        if re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", target):
            continue
        path, _, anchor = target.partition("#")
        dest = page if not path else (page.parent / path)
        if not dest.exists():
            bad.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            bad.append(f"{target}: {dest.name} has no heading with that anchor")
    return bad


def test_every_relative_link_resolves():
    pages = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").rglob("*.md"))]
    problems = {str(p.relative_to(ROOT)): b for p in pages if (b := broken_links(p))}
    assert not problems, problems


def test_the_checker_finds_a_broken_link(tmp_path):
    (tmp_path / "a.md").write_text("# Title here\n\n## Second, part (2)\n\n## Arrays in `.npy` files\n")
    page = tmp_path / "b.md"
    page.write_text("[ok](a.md) [ok](a.md#title-here) [ok](a.md#second-part-2) [ok](a.md#arrays-in-npy-files) `[code](x.md)`\n"
                    "[gone](x.md) [bad](a.md#nothing) [web](https://example.org/x)\n")
    assert broken_links(page) == ["x.md: no such file", "a.md#nothing: a.md has no heading with that anchor"]
