"""Every measured figure that README.md and the guides quote comes from docs/benchmarks.md, where a
command reproduces it: a quoted figure with no source line there fails this test.

What counts as a figure (in prose and tables; fenced blocks, inline code, link targets and HTML
comments are not read): a time (`191 us`, `4.05 s`, `about 5 minutes`), a speed ratio (`72.6x`,
`1.11-3.30x`), a rate (`2.5 million env-steps/s`, `31,000 tasks a second`, `1.72 M`, `89.5 k`) or a
size (`0.16 MiB`). A table column whose header names a unit (`ms a step`, `layer (ms)`,
`env-steps/s`) gives it to the number a cell starts with. Not figures: counts (`32 tasks`,
`4096 envs`, `11.2 M parameters`), settings and goals (`T = 1 s`, `target 60 s`, `<= 20 us`,
`for 30 s`, `every 10 s`, `at most 2 s`), a table's `1x` baseline, and powers of two in binary
units (`32 MiB`, `16 GiB`: capacities and limits, not measurements).

Where it must come from: the same figure, in any unit of its kind, in one section (`#`, `##` or
`###`) of docs/benchmarks.md that carries a command (a fenced block, or inline code that starts
with a program: `./scripts/...`, `build/...`, `bench/...`, `python ...`, `qfleet-...`). A quote
may round (`1.7 min` quotes `101.8 s`); `about N` may round to N's last non-zero digit (`about
50 minutes` quotes `2919 s`); a range quotes its two ends. A table row, or a paragraph, that links
to sections of the benchmarks page (`benchmarks.md#anchor`) must find its figures in those.

The escape, for numbers that are not qfleet's measurements, is an HTML comment
`<!-- figures: cited (SOURCE) -->` (another work's figures: a paper, a tool's documentation, the
authors of code qfleet replaces) or `<!-- figures: not measured (WHY) -->` (hardware, settings,
model constants). At the end of a line (or inside a table cell) it covers that line; on a line of
its own, the paragraph or table that follows, up to the next blank line. A marker that covers no
figure fails, so that the escapes stay few. docs/benchmarks.md and docs/README.md state the rule."""
from __future__ import annotations

import dataclasses
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BENCH = "docs/benchmarks.md"

NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
TIME = {"ns": 1e-9, "nanoseconds": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "microseconds": 1e-6,
        "ms": 1e-3, "milliseconds": 1e-3, "s": 1.0, "sec": 1.0, "seconds": 1.0, "second": 1.0,
        "min": 60.0, "minutes": 60.0, "minute": 60.0, "h": 3600.0, "hours": 3600.0, "hour": 3600.0}
SIZE = {"KB": 1e3, "kB": 1e3, "KiB": 2.0**10, "MB": 1e6, "MiB": 2.0**20, "GB": 1e9, "GiB": 2.0**30,
        "TB": 1e12, "TiB": 2.0**40}
SCALE = {"k": 1e3, "thousand": 1e3, "M": 1e6, "million": 1e6, "billion": 1e9}
UNITS = {**{u: ("time", f) for u, f in TIME.items()}, **{u: ("size", f) for u, f in SIZE.items()}}


def _alternatives(words):
    # The longest spelling first, so that `ms` is not read as `m`, `minutes` not as `min`.
    return "|".join(sorted(map(re.escape, words), key=len, reverse=True))


_UNIT, _SCALE = _alternatives(UNITS), _alternatives(SCALE)
FIGURE = re.compile(
    rf"(?<![\w.,/^=-])(?P<lo>{NUM})(?:\s*(?:-|–|to)\s*(?P<hi>{NUM}))?(?:"
    rf"(?P<ratio>[x×])(?![\w×])"                                          # 72.6x, 1.11-3.30x
    rf"|\s?(?P<unit>{_UNIT})(?![\w/])"                                    # 191 us, 4.05 s
    rf"|(?:\s(?P<scale>{_SCALE}))?(?P<rate>\s[\w-]+/s\b|\s[\w-]+\s(?:a|per)\ssecond\b)"  # 2.5 million env-steps/s
    rf"|\s(?P<abbr>M|k)(?![\w/])(?!\s+[A-Za-z])"                          # 1.72 M, 89.5 k
    rf")")
ABOUT = re.compile(r"(?:about|~|≈|some|roughly|nearly|around)\s*$", re.I)
# What stands just before a number that is set or aimed at rather than measured.
SETTING = re.compile(r"(?:=|<|>|≤|≥|\btargets?(?:\s+(?:of|is|was))?|\baims?\s+at(?:\s+the)?|\bfor(?: only| up to)?|"
                     r"\bevery|\bat (?:most|least)|\bdefault(?:s to)?|\bcapped at|\btimeout(?: of)?)\s*$", re.I)
MARKER = re.compile(r"<!--\s*figures:\s*(?:cited|not measured)\s*\((?P<why>[^)]+)\)\s*-->")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*$")
FENCE = re.compile(r"^\s*(```|~~~)")
# Inline code that is a command line: VAR=value words, then a program or a script.
COMMAND = re.compile(r"^(?:[A-Z_]+=\S*\s+)*(?:\./|build/|bench/|scripts/|tools/|python3?\s|qfleet|cmake\s|ctest\s)")


@dataclasses.dataclass(frozen=True)
class Figure:
    text: str
    kind: str      # time, size, ratio, rate
    values: tuple  # one, or a range's two ends, in seconds, bytes, times or per second
    steps: tuple   # each value's rounding step: a quote stands for value +- step / 2


def _value(number, factor, about):
    """(value, rounding step) of a written number: `1,048` (step 1), `0.180` (0.001), `about 50`
    (10: a round number's trailing zeros are not its digits)."""
    digits = number.replace(",", "")
    whole, _, frac = digits.partition(".")
    step = 10.0 ** -len(frac)
    if about and not frac:
        step = 10.0 ** (len(whole) - len(whole.rstrip("0")))
    return float(digits) * factor, step * factor


def _figure(text, kind, factor, numbers, about=False):
    ends = [_value(n, factor, about) for n in numbers if n is not None]
    return Figure(text, kind, tuple(v for v, _ in ends), tuple(s for _, s in ends))


def _capacity(m):
    """A power of two in binary units (`32 MiB`): a buffer, a limit or a memory's size."""
    value = float(m["lo"].replace(",", ""))
    return m["unit"].endswith("iB") and m["hi"] is None and value.is_integer() and int(value) & (int(value) - 1) == 0


def figures(line, column_units=None, tail=""):
    """The figures a line of prose or a table row quotes; `column_units` ({column: (kind, factor)},
    from its table's header) for the numbers the cells start with; `tail`, the start of the
    paragraph's next line, for a figure whose unit the line break moved there (`2.49 million` /
    `env-steps/s`)."""
    out = []
    for m in FIGURE.finditer(f"{line} {tail}" if tail else line):
        if m.start() >= len(line):
            break
        before = line[:m.start()]
        if SETTING.search(before):
            continue
        if m["ratio"]:
            if m["hi"] is None and float(m["lo"].replace(",", "")) == 1.0:
                continue  # a table's baseline row
            kind, factor = "ratio", 1.0
        elif m["unit"]:
            if _capacity(m):
                continue
            kind, factor = UNITS[m["unit"]]
        else:
            kind, factor = "rate", SCALE.get(m["scale"] or m["abbr"], 1.0)
        out.append(_figure(m[0].strip(), kind, factor, (m["lo"], m["hi"]), bool(ABOUT.search(before))))
    if column_units and line.lstrip().startswith("|"):
        for i, cell in enumerate(_cells(line)):
            lead = re.match(rf"\**({NUM})(?:\s*[-–]\s*({NUM}))?(?:\s({_SCALE}))?\**(?![\w.,%])"
                            rf"(?!\s*(?:[x×]|{_UNIT})(?!\w))", cell.strip())
            if lead and i in column_units:
                kind, factor = column_units[i]
                factor *= SCALE.get(lead[3], 1.0)
                out.append(_figure(f"{lead[0].strip('*')} ({kind} column)", kind, factor, lead.groups()[:2]))
    return out


def _cells(row):
    return row.strip().strip("|").split("|")


def _header_units(row):
    """{column: (kind, factor)} for the header cells that name a unit or a rate (`.../s`)."""
    units = {}
    for i, cell in enumerate(_cells(row)):
        named = [w for w in re.split(r"[\s()]+", cell) if w in UNITS]
        if named:
            units[i] = UNITS[named[0]]
        elif re.search(r"[\w-]+/s$", cell.strip()):
            units[i] = ("rate", 1.0)
    return units


def _links(raw):
    """The anchors of a raw line's links into the benchmarks page (`#` for the page itself)."""
    return [anchor or "#" for anchor in re.findall(r"benchmarks\.md(?:#([\w-]+))?\)", raw)]


@dataclasses.dataclass
class Line:
    number: int
    text: str      # the prose: no inline code, link targets or comments
    code: list     # its inline code spans
    units: dict    # its table's header units
    marker: int    # the line of the escape marker that covers it, or 0
    links: list = dataclasses.field(default_factory=list)  # its row's or paragraph's benchmarks anchors
    tail: str = ""  # the start of the next line of its paragraph

    def figures(self):
        return figures(self.text, self.units, self.tail)


def _kinds(raw):
    """Each line's kind: "fence" (a fenced block with its fences), "comment" (an HTML comment on
    lines of its own) or "prose"."""
    kinds, fence, in_comment = [], None, False
    for line in raw:
        if fence:
            kinds.append("fence")
            fence = None if line.strip().startswith(fence) else fence
        elif FENCE.match(line):
            kinds.append("fence")
            fence = FENCE.match(line)[1]
        elif in_comment or line.strip().startswith("<!--"):
            kinds.append("comment")
            in_comment = "-->" not in line
        else:
            kinds.append("prose")
    return kinds


def _unquote(lines):
    """The lines with their inline code blanked, and each line's code spans (a span may go on
    over a line break, as Markdown allows, but not over a blank line)."""
    text = "\n".join(lines)
    code = [[] for _ in lines]

    def blank(m):
        code[text.count("\n", 0, m.start())].append(" ".join(m[2].split()))
        return re.sub(r"[^\n]", "·", m[0])  # not a space: `std::thread`s is no figure

    return re.sub(r"(`+)((?:(?!\n[ \t]*\n).)+?)(?<!`)\1(?!`)", blank, text, flags=re.S).split("\n"), code


def read(text):
    """The prose lines of a Markdown page, and {marker line: its reason} of its escape markers."""
    raw = text.splitlines()
    kinds = _kinds(raw)
    unquoted, code = _unquote([line if kind == "prose" else "" for line, kind in zip(raw, kinds)])
    lines, markers, paragraph, covering, units = [], {}, [], 0, {}
    for i, line in enumerate(raw):
        number, marker = i + 1, MARKER.search(line)
        if marker:
            markers[number] = marker["why"]
        if kinds[i] != "prose":
            covering = number if marker and kinds[i] == "comment" else covering
            continue
        if not line.strip():
            covering, units, paragraph = 0, {}, []
            continue
        if line.lstrip().startswith("|") and number < len(raw) and re.match(r"^\s*\|[\s:|-]+\|\s*$", raw[number]):
            units = _header_units(line)
        prose = re.sub(r"\]\([^)\s]*\)", "]", re.sub(r"<!--.*?-->", "", unquoted[i]))
        lines.append(Line(number, prose, code[i], units, number if marker else covering))
        if line.lstrip().startswith("|"):
            lines[-1].links = _links(line)
        else:
            if paragraph and paragraph[-1].number == number - 1:
                paragraph[-1].tail = prose.lstrip()[:40]  # room for a unit or a rate's words
            paragraph.append(lines[-1])
            for member in paragraph:
                member.links += [a for a in _links(line) if a not in member.links]
    return lines, markers


def _slug(heading):
    """GitHub's anchor of a heading (benchmarks.md repeats no heading)."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def sources(text):
    """{anchor: [figures]} of the benchmarks page's sections that hold a command."""
    spans, fence = [], None
    for number, line in enumerate(text.splitlines(), 1):
        if fence:
            fence = None if line.strip().startswith(fence) else fence
        elif FENCE.match(line):
            fence = FENCE.match(line)[1]
            if spans:
                spans[-1][2] = True  # the section has a fenced block
        elif HEADING.match(line):
            spans.append([_slug(HEADING.match(line)[1]), number, False])
    lines, _ = read(text)
    out = {}
    for i, (anchor, start, fenced) in enumerate(spans):
        end = spans[i + 1][1] if i + 1 < len(spans) else len(text.splitlines()) + 1
        body = [l for l in lines if start <= l.number < end]
        if fenced or any(COMMAND.match(c.strip()) for l in body for c in l.code):
            out[anchor] = [f for l in body for f in l.figures()]
    return out


def sourced(quote, section):
    """Whether each value the quote gives (a range: both ends, from one section) is one of the
    section's figures, rounded."""
    return all(any(f.kind == quote.kind and any(abs(q - s) <= step / 2 * (1 + 1e-9) for s in f.values) for f in section)
               for q, step in zip(quote.values, quote.steps))


def check(name, text, bench_text):
    """["file:line: ..."] for every quoted figure the benchmarks page does not give, and every
    escape marker that covers no figure."""
    table = sources(bench_text)
    lines, markers = read(text)
    problems, used = [], set()
    for line in lines:
        quotes = line.figures()
        if line.marker:
            used.update([line.marker] if quotes else [])
            continue
        anchors = [a for a in line.links if a != "#"]
        narrowed = anchors and len(anchors) == len(line.links)
        sections = [table.get(a, []) for a in anchors] if narrowed else table.values()
        where = (" or ".join(f"{BENCH}#{a}" for a in anchors) + ", which its row or paragraph links") if narrowed \
            else f"the section of {BENCH} that measures it"
        problems += [f"{name}:{line.number}: {quote.text!r} has no source in {BENCH}: add it, with its command and "
                     f"machine, to {where}; a number that is not a qfleet measurement takes a marker, "
                     f"<!-- figures: cited (SOURCE) --> or <!-- figures: not measured (WHY) -->"
                     for quote in quotes if not any(sourced(quote, section) for section in sections)]
    problems += [f"{name}:{n}: the marker ({why}) covers no figure: remove it" for n, why in markers.items() if n not in used]
    return problems


def guides():
    """README.md and the guides: docs/*.md but the benchmarks page, and tutorials/*.md."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "tutorials").glob("*.md"))]
    return [p for p in pages if p != ROOT / BENCH]


@pytest.mark.parametrize("page", guides(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_quoted_figure_comes_from_the_benchmarks_page(page):
    problems = check(str(page.relative_to(ROOT)), page.read_text(), (ROOT / BENCH).read_text())
    assert not problems, "figures without a source:\n" + "\n".join(problems)


def test_every_section_of_the_benchmarks_page_carries_its_command():
    """Otherwise a section's figures would silently stop being sources."""
    text = (ROOT / BENCH).read_text()
    headings = [_slug(HEADING.match(l)[1]) for l in text.splitlines() if HEADING.match(l)]
    assert set(headings) == set(sources(text)), set(headings) - set(sources(text))


BENCH_PAGE = """# Benchmarks

## Circuits

The layer, CPU-2c (`build/bench/bench_circuits --benchmark_filter=BM_Classifier`): 191 us; PennyLane
18.4 ms (96x); the suite in 101.8 s; 0.10-0.14 ms a call.

| tool | ms a step | env-steps/s |
|---|---|---|
| qfleet | **7.80** | 1.72 million |
| peer | 11,870 | 89,520 |

## Environments

An estimate with no command: 3.5 s.
"""


def test_the_checker_reports_an_unsourced_figure():
    guide = "# Guide\n\nIt takes 4.2 ms a step.\n\n| x | time |\n|---|---|\n| a | 191 us |\n| b | 23.7x |\n"
    problems = check("docs/guide.md", guide, BENCH_PAGE)
    assert [p.split(" has no source")[0] for p in problems] == ["docs/guide.md:3: '4.2 ms'", "docs/guide.md:8: '23.7x'"]
    assert "add it, with its command and machine, to the section of docs/benchmarks.md" in problems[0]
    # A section without a command is no source; a link narrows the sources to its section.
    assert check("g.md", "It runs in 3.5 s.\n", BENCH_PAGE)
    assert "docs/benchmarks.md#environments, which its row or paragraph links" in check(
        "g.md", "191 us ([there](benchmarks.md#environments)).\n", BENCH_PAGE)[0]


def test_the_checker_passes_a_sourced_figure_in_any_form():
    guide = ("# Guide\n\nThe layer: 191 µs, 0.191 ms ([benchmarks](benchmarks.md#circuits)); 96x PennyLane's "
             "18 ms; every experiment in 1.7 min (about 2 minutes); 0.10-0.14 ms.\n\n"
             "| | ms | rate |\n|---|---|---|\n| qfleet | 7.8 | 1.72 M env-steps/s |\n| peer | 11,870 | 89.5 k |\n")
    assert check("docs/guide.md", guide, BENCH_PAGE) == []


def test_settings_counts_capacities_and_marked_figures_are_not_checked():
    guide = ("T = 1 s, 32 tasks, B = 64, 4096 envs, 11.2 M parameters, target 60 s, <= 20 us, for 30 s, "
             "every 10 s, a 32 MiB store, 2 x 2 products, 1x.\n\n"
             "The original took 6-10 s a step. <!-- figures: cited (its authors' report) -->\n\n"
             "<!-- figures: not measured (the H100's datasheet) -->\n| memory | 227 KiB |\n|---|---|\n")
    assert check("docs/guide.md", guide, BENCH_PAGE) == []
    stale = check("docs/guide.md", "<!-- figures: cited (a paper) -->\nNo figure here.\n", BENCH_PAGE)
    assert stale == ["docs/guide.md:1: the marker (a paper) covers no figure: remove it"]


def test_the_figures_a_line_quotes():
    found = [(f.text, f.kind, f.values) for f in figures("4.05 s, 2.5 million env-steps/s, 31,000 tasks a second, "
                                                         "1.11-3.30x, about 5 minutes")]
    assert found == [("4.05 s", "time", (4.05,)), ("2.5 million env-steps/s", "rate", (2.5e6,)),
                     ("31,000 tasks a second", "rate", (31000.0,)), ("1.11-3.30x", "ratio", (1.11, 3.30)),
                     ("5 minutes", "time", (300.0,))]
    assert figures("about 50 minutes")[0].steps == (600.0,) and figures("50 minutes")[0].steps == (60.0,)


def test_code_spans_and_line_breaks_are_read_as_markdown_reads_them():
    """Inline code may go on over a line break (its numbers are not figures, the prose after it
    is read), and a line break may stand between a number and its unit."""
    lines, _ = read("Run `qfleet-rl bench-env\n--env num_envs=4096` 2.49 million\nenv-steps/s, then `x 3 s`.\n")
    assert [(l.number, [f.text for f in l.figures()]) for l in lines] == [(1, []), (2, ["2.49 million env-steps/s"]), (3, [])]
    assert lines[0].code == ["qfleet-rl bench-env --env num_envs=4096"]
