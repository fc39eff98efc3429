"""Every fenced block of README.md and docs/*.md runs (or is checked) as written: one test per
block, named page:line:language. The rules and the markers are docs_runner.py's docstring;
docs/README.md says what a reader may rely on. The blocks run against the checkout
(`PYTHONPATH=python`) and the build under test (the tree of QFLEET_META), so the installed-wheel
run of this suite skips them."""
import importlib.util
import json
import os
import pathlib
import shutil

import pytest

import docs_runner as db

BLOCKS = db.all_blocks()
RUN = [b for b in BLOCKS if b.lang in db.RUN_LANGS and b.lang not in ("cpp", "c")]
COMPILED = [b for b in BLOCKS if b.lang in ("cpp", "c") and b.runs]
UPDATE = os.environ.get("QFLEET_UPDATE_DOCS") == "1"


def _build_dir():
    binary = os.environ.get("QFLEET_META")
    if not binary:
        pytest.skip("QFLEET_META (the qfleet-meta binary of the build under test) is not set")
    origin = importlib.util.find_spec("qfleet").origin
    if not pathlib.Path(origin).resolve().is_relative_to(db.ROOT / "python"):
        pytest.skip(f"the tests' qfleet is {origin}: the docs' blocks run once, on the checkout's package")
    return pathlib.Path(binary).resolve().parents[2]


class Pages:
    """Per page: its work folder and, while its blocks run, its Python interpreter."""

    def __init__(self, factory):
        self.factory = factory
        self.folders = {}
        self.interpreter = None  # (page, Interpreter)

    def folder(self, page, build):
        if page not in self.folders:
            slug = page.replace("/", "_").replace(".md", "")
            self.folders[page] = db.work_folder(self.factory.mktemp(slug), build)
        return self.folders[page]

    def python(self, page, build):
        if self.interpreter and self.interpreter[0] != page:
            self.close()
        if not self.interpreter:
            folder = self.folder(page, build)
            self.interpreter = (page, db.Interpreter(folder, db.environment(folder, build)))
        return self.interpreter[1]

    def close(self):
        if self.interpreter:
            self.interpreter[1].close()
            self.interpreter = None


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    p = Pages(tmp_path_factory)
    yield p
    p.close()


_failed = {}  # page -> the first Python block that failed (later ones of the page are not reached)


def _check_shown(block, shown, actual, varies, new_body):
    if db.same_output(shown, actual, varies):
        return
    if UPDATE:
        db.rewrite_block(block, new_body)
        return
    pytest.fail(f"{block.id}: the page shows\n{shown}\n--- but the command prints ---\n{actual}\n"
                "(QFLEET_UPDATE_DOCS=1 rewrites the block with the program's output)", pytrace=False)


@pytest.mark.parametrize("block", RUN, ids=lambda b: b.id)
def test_block(block, pages):
    build = _build_dir()
    folder = pages.folder(block.page, build)
    env = db.environment(folder, build)
    marker = block.marker.kind if block.marker else None
    if marker == "skip":
        missing = db.missing_commands(block.body, folder, env) if block.lang in ("sh", "bash", "console") else []
        if missing:
            pytest.fail(f"{block.id} (not run: {block.marker.reason}) names what does not exist: {missing}", pytrace=False)
        return
    if block.lang == "python":
        if block.page in _failed:
            pytest.skip(f"not reached: {_failed[block.page]} failed first")
        ok, message = pages.python(block.page, build).run(block, timeout=600)
        if not ok:
            _failed[block.page] = f"{block.page}:{block.line}"
            pytest.fail(f"{block.id}:\n{message}", pytrace=False)
    elif block.lang in ("sh", "bash"):
        r = db.run_shell(block.body, folder, env)
        if r.returncode:
            pytest.fail(f"{block.id}: exit status {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}", pytrace=False)
    elif block.lang == "console":
        commands = db.console_commands(block.body)
        actual = []
        for command, _ in commands:
            r = db.run_shell("exec 2>&1\n" + command, folder, env, strict=False)
            actual.append(r.stdout.rstrip("\n"))
        shown = "\n".join(f"$ {c}\n{s}" if s else f"$ {c}" for c, s in commands)
        got = "\n".join(f"$ {c}\n{a}" if a else f"$ {c}" for (c, _), a in zip(commands, actual))
        _check_shown(block, shown, got, (), got + "\n")
    elif marker == "output":
        r = db.run_shell(block.marker.arg, folder, env)
        if r.returncode:
            pytest.fail(f"{block.id}: `{block.marker.arg}` failed:\n{r.stderr[-3000:]}", pytrace=False)
        varies = [k.strip() for k in block.marker.option("varies").split(",") if k.strip()]
        _check_shown(block, block.body, r.stdout, varies, r.stdout)
    elif block.lang == "json":
        if marker == "fragment":
            db.json_fragment(block.body)
        else:
            try:
                value = json.loads(block.body)
            except json.JSONDecodeError as e:
                pytest.fail(f"{block.id}: not JSON: {e}", pytrace=False)
            if marker == "file":
                assert value == json.loads((db.ROOT / block.marker.arg).read_text()), \
                    f"{block.id} is not {block.marker.arg}"
    else:
        raise AssertionError(f"{block.id}: no rule")


def _start_compiling(folder):
    build = _build_dir()
    cxx, cc = shutil.which("g++"), shutil.which("gcc")
    if not cxx or not cc:
        pytest.skip("no g++/gcc on PATH (the installed-wheel run has no compiler)")
    flags = ["-fsyntax-only", "-w", *db.include_flags(build)]
    groups = {
        "core": ([b for b in COMPILED if b.lang == "cpp" and not db.needs_torch(b)], [cxx, "-std=c++20", *flags], ".cpp"),
        "torch": ([b for b in COMPILED if b.lang == "cpp" and db.needs_torch(b)],
                  [cxx, "-std=c++20", *flags, *db.torch_flags()], ".cpp"),
    }
    for n, b in enumerate(b for b in COMPILED if b.lang == "c"):
        groups[f"c{n}"] = ([b], [cc, "-std=c11", "-x", "c", *flags], ".c")
    return db.Compilation(folder, build, groups)


_compiling = {}


@pytest.fixture(scope="module", autouse=True)
def _compile_in_the_background(request, tmp_path_factory):
    """The C/C++ blocks compile while the other blocks run (torch's headers take half a minute):
    the C++ blocks as two translation units, with and without LibTorch, each C block alone."""
    if any(item.name.startswith("test_compiled_block") for item in request.session.items):
        try:
            _compiling["it"] = _start_compiling(tmp_path_factory.mktemp("compile"))
        except pytest.skip.Exception as e:
            _compiling["skip"] = str(e)
    yield
    _compiling.clear()


@pytest.fixture
def compilation():
    if "it" not in _compiling:
        pytest.skip(_compiling.get("skip", "not compiling"))
    return _compiling["it"]


@pytest.mark.parametrize("block", COMPILED, ids=lambda b: b.id)
def test_compiled_block(block, compilation):
    ok, message = compilation.result(block)
    if not ok:
        pytest.fail(f"{block.id} does not compile:\n{message}", pytrace=False)


def test_the_compile_check_names_the_failing_block(tmp_path):
    if not shutil.which("g++"):
        pytest.skip("no g++")
    good = db.Block("docs/a.md", 10, "cpp", "#include <vector>\nstd::vector<int> v{1, 2};\nint f() { return v[0]; }\n")
    bad = db.Block("docs/a.md", 20, "cpp", "int g() { return undefined_name; }\n")
    frag = db.Block("docs/b.md", 5, "cpp", "int y = x + 1;\n(void)y;\n", db.Marker("fragment", options=(("given", "int x"),)))
    c = db.Compilation(tmp_path, db.ROOT / "build", {"t": ([good, bad, frag], ["g++", "-std=c++20", "-fsyntax-only"], ".cpp")})
    assert c.result(good) == (True, "") and c.result(frag) == (True, "")
    ok, message = c.result(bad)
    assert not ok and "docs/a.md:21" in message and "undefined_name" in message


def test_every_block_has_a_rule():
    """Parsing every page raised no DocError (an unknown language, a stray or bad marker); and
    every skipped block says why."""
    assert BLOCKS
    for b in BLOCKS:
        if b.marker and b.marker.kind == "skip":
            assert b.marker.reason


def test_the_parser(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("# t\n```python\nx = 1\n```\n<!-- docs-test: skip (long: an hour) -->\n```sh\nrun\n```\n"
                    "<!-- docs-test: fragment; given: int a; flags: -I apps/rl -->\n<!-- other -->\n```cpp\nf(a);\n```\n"
                    "```text\nout\n```\n")
    old = db.ROOT
    try:
        db.ROOT = tmp_path
        got = db.blocks(page)
    finally:
        db.ROOT = old
    assert [(b.line, b.lang, b.body) for b in got] == [(2, "python", "x = 1\n"), (6, "sh", "run\n"),
                                                        (11, "cpp", "f(a);\n"), (14, "text", "out\n")]
    assert got[1].marker.reason == "long: an hour" and not got[1].runs
    assert got[2].marker.option("given") == "int a" and got[2].marker.option("flags") == "-I apps/rl"
    for bad in ("<!-- docs-test: skip -->\n```sh\nx\n```\n", "```py\nx\n```\n", "<!-- docs-test: skip (x) -->\ntext\n",
                "<!-- docs-test: fragment -->\n```python\nx\n```\n", "```sh\nopen\n"):
        page.write_text(bad)
        with pytest.raises(db.DocError):
            db.ROOT = tmp_path
            try:
                db.blocks(page)
            finally:
                db.ROOT = old


def test_the_output_comparison():
    assert db.same_output('{"a": 0.30000000000000004, "isa": "avx2"}\n', '{"a": 0.3, "isa": "avx512"}', ["isa"])
    assert not db.same_output('{"a": 0.31}', '{"a": 0.3}')
    assert not db.same_output('{"b": 1, "a": 2}', '{"a": 2, "b": 1}')  # key order is what the reader sees
    assert db.same_output("[\n  1,\n  ...\n  9\n]", "[\n  1,\n  2,\n  3,\n  9\n]")
    assert db.same_output("x 1e-17", "x -3e-18")
    assert db.json_fragment('"ops": [...], "x": {"npy": "x.npy"}') == {"ops": [], "x": {"npy": "x.npy"}}


def test_the_existence_check(tmp_path):
    env = {"PATH": os.environ["PATH"]}
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "a.sh").write_text("")
    code = ("./scripts/a.sh --x  # comment\nFOO=1 scripts/missing.sh\npython -m json.tool x\n"
            "python -m qfleet.nothing_here\nno-such-program-xyz | cat\ncd q && git status\n")
    assert db.missing_commands(code, tmp_path, env) == ["scripts/missing.sh", "python -m qfleet.nothing_here",
                                                        "no-such-program-xyz"]
