"""The fenced blocks of README.md and docs/*.md, and how each is run (tests/python/test_docs_blocks.py).

A block is run or checked according to its language, unless the line just before its fence (HTML
comments only between them) is a marker `<!-- docs-test: ... -->`:

  python                   run; the blocks of one page in order, in ONE fresh interpreter (later
                           blocks use earlier names), `PYTHONPATH=python`, from the page's work folder
  sh, bash                 run by `bash -euo pipefail` from the page's work folder
  console                  each `$ command` is run by bash there; the lines after it are its output
                           (stdout and stderr), compared with what it prints
  json                     parsed
  cpp, c                   compiled (g++ -std=c++20 -fsyntax-only; gcc -std=c11 for C) against
                           include/, the build's generated headers, adapters/*/include and torch's
  text, mermaid, no name   not run
  anything else            an error: a new language has to be given a rule here first

A page's work folder is a fresh folder laid out like the checkout (its top-level entries as
links) with `build` the build under test, so a block's paths read as from the repository root
and what it writes stays out of the checkout. `python` is the test's interpreter, and the
build's programs (`qfleet`, `qfleet-meta`, ...) are on PATH, as after installing.

Markers (one per block):

  <!-- docs-test: skip (REASON) -->       not run; REASON is required. The commands of a shell
                                          block must still exist (a path, a program on PATH,
                                          python's -m module or script)
  <!-- docs-test: fragment; given: DECLS; flags: FLAGS -->
                                          C/C++ statements: compiled as the body of a function whose
                                          parameters are DECLS (the names the fragment takes as
                                          given), its #include lines lifted out; FLAGS are more
                                          compiler flags (both parts optional). JSON: `...` elisions
                                          are dropped and a bare `"key": value` list is wrapped in
                                          braces, then it must parse
  <!-- docs-test: file PATH -->           a JSON block equal to the file PATH's JSON
  <!-- docs-test: output of `COMMAND`; varies: KEY, KEY -->
                                          the block is what COMMAND prints, run as a shell block
                                          is; compared line by line with numbers to 1e-9 relative
                                          (1e-12 absolute), a `"KEY": value` listed under varies
                                          compared by its key only, a line `...` matching any lines

QFLEET_UPDATE_DOCS=1 rewrites `output of` and console blocks with what the programs print.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import pathlib
import re
import select
import shlex
import shutil
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]

RUN_LANGS = {"python", "sh", "bash", "console", "json", "cpp", "c"}
NOT_RUN_LANGS = {"", "text", "mermaid"}
MARKER_KINDS = {"skip", "fragment", "file", "output"}


def pages():
    """README.md and every guide in docs/ (not its subfolders)."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def rel(path):
    return str(pathlib.Path(path).resolve().relative_to(ROOT))


class DocError(ValueError):
    """A page breaks the rules above (an unknown language, a bad marker, an unclosed fence)."""


@dataclasses.dataclass(frozen=True)
class Marker:
    kind: str
    reason: str = ""
    arg: str = ""  # file: the path; output: the command
    options: tuple = ()  # ((key, value), ...)

    def option(self, key, default=""):
        return dict(self.options).get(key, default)


@dataclasses.dataclass(frozen=True)
class Block:
    page: str  # relative to ROOT
    line: int  # the opening fence's line, 1-based
    lang: str
    body: str
    marker: Marker | None = None

    @property
    def id(self):
        return f"{self.page}:{self.line}:{self.lang or 'text'}"

    @property
    def end(self):
        """The closing fence's line."""
        return self.line + self.body.count("\n") + 1

    @property
    def runs(self):
        return self.lang in RUN_LANGS and not (self.marker and self.marker.kind == "skip")


_MARKER = re.compile(r"<!--\s*docs-test:\s*(.*?)\s*-->\s*$")
_FENCE = re.compile(r"^(\s*)(`{3,})\s*([\w+-]*)\s*$")


def parse_marker(text, where):
    head, *rest = [part.strip() for part in text.split(";")] if not text.startswith("skip") else [text]
    kind, _, tail = head.partition(" ")
    tail = tail.strip()
    if kind not in MARKER_KINDS:
        raise DocError(f"{where}: unknown docs-test marker {kind!r} (known: {', '.join(sorted(MARKER_KINDS))})")
    options = []
    for part in rest:
        key, sep, value = part.partition(":")
        if not sep or key.strip() not in ("given", "flags", "varies"):
            raise DocError(f"{where}: docs-test option {part!r}: expected given:, flags: or varies:")
        options.append((key.strip(), value.strip()))
    if kind == "skip":
        m = re.fullmatch(r"\((.+)\)", tail, flags=re.S)
        if not m or not m.group(1).strip():
            raise DocError(f"{where}: a skip marker needs its reason: <!-- docs-test: skip (why) -->")
        return Marker("skip", reason=m.group(1).strip())
    if kind == "fragment":
        if tail:
            raise DocError(f"{where}: fragment takes options after ';' only, got {tail!r}")
        return Marker("fragment", options=tuple(options))
    if kind == "file":
        if not tail or not (ROOT / tail).is_file():
            raise DocError(f"{where}: docs-test file: no such file {tail!r}")
        return Marker("file", arg=tail)
    m = re.fullmatch(r"of\s+`([^`]+)`", tail)
    if not m:
        raise DocError(f"{where}: expected <!-- docs-test: output of `COMMAND` -->, got {tail!r}")
    return Marker("output", arg=m.group(1), options=tuple(options))


def blocks(page):
    """The fenced blocks of a page, in order."""
    page = pathlib.Path(page)
    lines = page.read_text().splitlines()
    name = rel(page)
    out, i = [], 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        stray = _MARKER.search(lines[i])
        if stray and not m:  # a marker must stand just above a fence (HTML comments between)
            j = i + 1
            while j < len(lines) and lines[j].strip().startswith("<!--") and lines[j].strip().endswith("-->"):
                j += 1
            if j >= len(lines) or not _FENCE.match(lines[j]):
                raise DocError(f"{name}:{i + 1}: a docs-test marker not followed by a fenced block")
        if not m:
            i += 1
            continue
        indent, ticks, lang = m.groups()
        j = i + 1
        while j < len(lines) and not re.match(rf"^\s*{ticks}\s*$", lines[j]):
            j += 1
        if j >= len(lines):
            raise DocError(f"{name}:{i + 1}: unclosed fence")
        body = "".join((line[len(indent):] if line.startswith(indent) else line.lstrip()) + "\n"
                       for line in lines[i + 1:j])
        marker, k = None, i - 1
        while k >= 0 and lines[k].strip().startswith("<!--") and lines[k].strip().endswith("-->"):
            mm = _MARKER.search(lines[k])
            if mm:
                if marker:
                    raise DocError(f"{name}:{i + 1}: two docs-test markers on one block")
                marker = parse_marker(mm.group(1), f"{name}:{k + 1}")
            k -= 1
        lang = lang.lower()
        if lang not in RUN_LANGS | NOT_RUN_LANGS:
            raise DocError(f"{name}:{i + 1}: ```{lang}: no rule for this language (docs_runner.py)")
        block = Block(name, i + 1, lang, body, marker)
        _check_marker_fits(block)
        out.append(block)
        i = j + 1
    return out


def _check_marker_fits(b):
    k = b.marker.kind if b.marker else None
    ok = {None: True, "skip": b.lang in RUN_LANGS, "fragment": b.lang in ("cpp", "c", "json"),
          "file": b.lang == "json", "output": b.lang not in ("python", "sh", "bash", "console", "cpp", "c")}[k]
    if not ok:
        raise DocError(f"{b.page}:{b.line}: a {k} marker does not apply to a ```{b.lang or 'text'} block")


def all_blocks():
    return [b for page in pages() for b in blocks(page)]


# ------------------------------------------------------------------ the work folder and environment


def work_folder(folder, build):
    """Lays out `folder` like the checkout: links to its top-level entries, build -> the build
    under test, and bin/ with `python` (the test's interpreter)."""
    folder = pathlib.Path(folder)
    for entry in ROOT.iterdir():
        if entry.name in (".git", "build") or (folder / entry.name).exists():
            continue
        (folder / entry.name).symlink_to(entry)
    if not (folder / "build").exists():
        (folder / "build").symlink_to(build)
    bin_dir = folder / ".docs-test-bin"
    bin_dir.mkdir(exist_ok=True)
    for name in ("python", "python3"):
        wrapper = bin_dir / name
        wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
        wrapper.chmod(0o755)
    return folder


def environment(folder, build):
    """The blocks' environment: the checkout's package (PYTHONPATH=python), the build's programs
    on PATH, no QFLEET_* variable of the test run (they name the build under test for the tests)."""
    env = {k: v for k, v in os.environ.items() if not (k.startswith("QFLEET_") or k == "PYTHONPATH")}
    env["PYTHONPATH"] = str(ROOT / "python")
    if pathlib.Path(build).resolve() != (ROOT / "build").resolve():
        env["QFLEET_BUILD_DIR"] = str(build)
    programs = [str(pathlib.Path(build) / "tools")] + sorted(str(p) for p in pathlib.Path(build).glob("apps/*")
                                                              if p.is_dir())
    # (then the interpreter's own folder, as in an activated environment: pip, torchrun, pl-device-test)
    env["PATH"] = os.pathsep.join([str(pathlib.Path(folder) / ".docs-test-bin"), *programs,
                                   str(pathlib.Path(sys.executable).parent), env.get("PATH", "")])
    return env


# ------------------------------------------------------------------ Python: one interpreter per page

DRIVER = r"""
import json, os, sys, traceback
proto = os.fdopen(os.dup(1), "w")      # replies go here; what the blocks print goes to the log
os.dup2(2, 1)
sys.stdout = os.fdopen(1, "w", buffering=1)
namespace = {"__name__": "__main__", "__builtins__": __builtins__}
for request in sys.stdin:
    block = json.loads(request)
    try:
        code = compile("\n" * block["line"] + block["code"], block["file"], "exec")
        exec(code, namespace)
        reply = {"ok": True}
    except BaseException:
        reply = {"ok": False, "error": traceback.format_exc()}
    sys.stdout.flush()
    sys.stderr.flush()
    proto.write(json.dumps(reply) + "\n")
    proto.flush()
"""


class Interpreter:
    """A fresh interpreter for one page's Python blocks, fed one block at a time."""

    def __init__(self, folder, env):
        self.log_path = pathlib.Path(folder) / ".docs-test-python.log"
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen([sys.executable, "-u", "-c", DRIVER], cwd=folder, env=env, text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log)

    def run(self, block, timeout):
        """(ok, message): the block's traceback and what it printed, on failure."""
        start = self.log_path.stat().st_size
        self.proc.stdin.write(json.dumps({"file": str(ROOT / block.page), "line": block.line,
                                          "code": block.body}) + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if ready else ""
        self.log.flush()
        with open(self.log_path) as f:
            f.seek(start)
            printed = f.read()[-4000:]
        if not ready:
            self.close()
            return False, f"no result after {timeout} s\n--- printed ---\n{printed}"
        if not line:
            code = self.proc.wait()
            return False, f"the interpreter died (exit status {code})\n--- printed ---\n{printed}"
        reply = json.loads(line)
        if reply["ok"]:
            return True, ""
        return False, f"{reply['error']}\n--- printed ---\n{printed}"

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


# ------------------------------------------------------------------ shell and console blocks


def run_shell(code, folder, env, timeout=300, strict=True):
    args = ["bash", "-euo", "pipefail", "-c", code] if strict else ["bash", "-c", code]
    return subprocess.run(args, cwd=folder, env=env, capture_output=True, text=True, timeout=timeout)


def console_commands(body):
    """[(command, shown output)] of a console block: `$ ` lines (with `\\` continuations) and the
    lines after each."""
    out = []
    for line in body.splitlines():
        if line.startswith("$ "):
            out.append([line[2:], []])
        elif out and out[-1][0].endswith("\\") and not out[-1][1]:
            out[-1][0] += "\n" + line
        elif out:
            out[-1][1].append(line)
        else:
            raise DocError(f"console block: output before the first `$ ` command: {line!r}")
    return [(cmd, "\n".join(shown)) for cmd, shown in out]


_BUILTINS = {"cd", "export", "source", ".", "echo", "printf", "set", "unset", "true", "false", "test", "[",
             "exit", "read", "eval"}
_PREFIXES = {"time", "env", "exec", "nice", "sudo"}  # run the command after them


def command_names(code):
    """[(program, argv)] of each simple command of a shell text (comments and environment
    assignments dropped), for the existence check of skipped blocks."""
    code = re.sub(r"\\\n", " ", code)
    out = []
    for line in code.splitlines():
        lex = shlex.shlex(line, posix=True, punctuation_chars=True)
        lex.whitespace_split = True
        lex.commenters = "#"
        try:
            tokens = list(lex)
        except ValueError:  # an unclosed quote: a placeholder line, nothing to check
            continue
        words = []
        for tok in tokens + [";"]:
            if tok and set(tok) <= set("|&;()<>"):
                while words and (re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0]) or words[0] in _PREFIXES):
                    words.pop(0)
                if words:
                    out.append((words[0], words[1:]))
                words = []
                redirect = tok in ("<", ">", ">>", "2>", "&>")
                if redirect:
                    words = ["<redirect>"]
            else:
                if words == ["<redirect>"]:
                    words = []
                    continue
                words.append(tok)
    return [(p, a) for p, a in out if p != "<redirect>"]


def _module_exists(module):
    parts = module.split(".")
    base = ROOT / "python" / pathlib.Path(*parts)
    if base.with_suffix(".py").is_file() or (base / "__main__.py").is_file() or (base / "__init__.py").is_file():
        return True
    if parts[0] in ("qfleet",):
        return False
    import importlib.util
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def missing_commands(code, folder, env):
    """What a skipped shell block names that does not exist: paths (from the work folder),
    programs (on PATH), python's -m modules and scripts."""
    missing = []
    for prog, argv in command_names(code):
        if prog in _BUILTINS or prog.startswith("$"):
            continue
        if "/" in prog:
            if not (pathlib.Path(folder) / os.path.expanduser(prog)).exists():
                missing.append(prog)
            continue
        if prog in ("python", "python3", "torchrun"):
            args = [a for a in argv if a]
            while args and args[0].startswith("-") and args[0] not in ("-m", "-c"):
                args.pop(0)
                if prog == "torchrun" and args and not args[0].startswith("-"):
                    args.pop(0)  # (torchrun's options take values)
            if args[:1] == ["-m"] and len(args) > 1:
                if not _module_exists(args[1]):
                    missing.append(f"{prog} -m {args[1]}")
            elif args and args[0] != "-c" and not (pathlib.Path(folder) / args[0]).exists():
                missing.append(f"{prog} {args[0]}")
            if prog != "torchrun":
                continue
        if shutil.which(prog, path=env["PATH"]) is None:
            missing.append(prog)
    return missing


# ------------------------------------------------------------------ shown output against actual output

_NUMBER = re.compile(r"(-?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?)")


def _mask(text, varies):
    for key in varies:
        text = re.sub(rf'("{re.escape(key)}":\s*)(\{{[^{{}}]*\}}|\[[^\[\]]*\]|"[^"]*"|[^,\n]*)', r"\1<varies>", text)
    return text


def _same_line(shown, actual):
    a, b = _NUMBER.split(shown), _NUMBER.split(actual)
    if len(a) != len(b):
        return False
    for i, (x, y) in enumerate(zip(a, b)):
        if i % 2 == 0:
            if x != y:
                return False
        elif x != y and not math.isclose(float(x), float(y), rel_tol=1e-9, abs_tol=1e-12):
            return False
    return True


def _match(shown, actual):
    if not shown:
        return not actual
    if shown[0].strip() == "...":
        return any(_match(shown[1:], actual[i:]) for i in range(len(actual) + 1))
    return bool(actual) and _same_line(shown[0], actual[0]) and _match(shown[1:], actual[1:])


def same_output(shown, actual, varies=()):
    """Whether the shown text is the actual one (numbers to 1e-9, `...` lines for any lines)."""
    def lines(text):
        out = [line.rstrip() for line in _mask(text, varies).splitlines()]
        while out and not out[-1]:
            out.pop()
        return out
    return _match(lines(shown), lines(actual))


def rewrite_block(block, new_body):
    """Replaces a block's text in its page (QFLEET_UPDATE_DOCS=1)."""
    path = ROOT / block.page
    now = [b for b in blocks(path) if b.body == block.body and b.lang == block.lang]  # (an earlier rewrite may
    now = min(now, key=lambda b: abs(b.line - block.line))                           # have moved it)
    lines = path.read_text().splitlines(keepends=True)
    lines[now.line:now.end - 1] = [new_body if new_body.endswith("\n") else new_body + "\n"]
    path.write_text("".join(lines))


# ------------------------------------------------------------------ JSON blocks


def json_fragment(body):
    """A JSON fragment made whole: `...` elisions dropped, bare members wrapped in braces."""
    text = re.sub(r"\[\s*\.\.\.\s*\]", "[]", body)
    text = re.sub(r"\{\s*\.\.\.\s*\}", "{}", text)
    text = re.sub(r",\s*\.\.\.", "", text)
    text = re.sub(r"\.\.\.\s*,?", "", text)
    if text.lstrip().startswith('"'):
        text = "{" + text + "}"
    return json.loads(text)


# ------------------------------------------------------------------ C and C++ blocks

TORCH_HINTS = ("torch", "train.hpp", "train_graph.hpp", "vec_env.hpp")


def needs_torch(block):
    return any(h in line for line in block.body.splitlines() if line.lstrip().startswith("#include")
               for h in TORCH_HINTS) or "torch::" in block.body


def include_flags(build):
    flags = [f"-I{ROOT / 'include'}", f"-I{pathlib.Path(build) / 'generated' / 'include'}",
             f"-I{ROOT / 'adapters' / 'torch' / 'include'}", f"-I{ROOT / 'adapters' / 'c' / 'include'}"]
    return flags


def torch_flags():
    import torch
    base = pathlib.Path(torch.__file__).parent / "include"
    return [f"-isystem{base}", f"-isystem{base / 'torch' / 'csrc' / 'api' / 'include'}"]


def translation_unit(group):
    """One C++ source for several blocks: each in a namespace of its own (a fragment in a
    function), their #include lines lifted to the top, `#line` keeping the page's line numbers so
    that the compiler's messages name page:line."""
    includes, parts = [], []
    for n, b in enumerate(group):
        body_lines = []
        for k, line in enumerate(b.body.splitlines()):
            if line.lstrip().startswith("#include"):
                includes.append(f'#line {b.line + 1 + k} "{b.page}"\n{line}\n')
                body_lines.append("")
            else:
                body_lines.append(line)
        body = "\n".join(body_lines)
        head = f'#line {b.line + 1} "{b.page}"\n'
        if b.marker and b.marker.kind == "fragment":
            given = b.marker.option("given")
            parts.append(f"namespace docs_block_{n} {{\n[[maybe_unused]] void fragment({given}) {{\n{head}{body}\n}}\n}}\n")
        else:
            parts.append(f"namespace docs_block_{n} {{\n{head}{body}\n}}\n")
    return "".join(includes) + "".join(parts)


def c_unit(b):
    body = b.body
    includes = "".join(line + "\n" for line in body.splitlines() if line.lstrip().startswith("#include"))
    rest = "\n".join("" if line.lstrip().startswith("#include") else line for line in body.splitlines())
    if b.marker and b.marker.kind == "fragment":
        return f'{includes}void docs_fragment({b.marker.option("given") or "void"}) {{\n#line {b.line + 1} "{b.page}"\n{rest}\n}}\n'
    return f'{includes}#line {b.line + 1} "{b.page}"\n{rest}\n'


def blocks_named(log, group):
    """The blocks of `group` that the compiler's output names."""
    named = set()
    for page, line in re.findall(r"^(?:In file included from |\s*from )?([\w./-]+\.md):(\d+)", log, flags=re.M):
        for b in group:
            if b.page == page and b.line < int(line) < b.end:
                named.add(b.id)
    return named


class Compilation:
    """Compiles groups of blocks in the background; `result(block)` waits for its group."""

    def __init__(self, folder, build, groups):
        self.folder = pathlib.Path(folder)
        self.build = build
        self.pending = {}
        self.results = {}
        for name, (group, command, suffix) in groups.items():
            self._start(name, group, command, suffix)

    def _start(self, name, group, command, suffix):
        if not group:
            return
        source = self.folder / f"{name}{suffix}"
        source.write_text(translation_unit(group) if suffix == ".cpp" else c_unit(group[0]))
        flags, seen = [], set()
        for b in group:  # a marker's flags (e.g. -I apps/rl: relative to the checkout, the compiler's folder)
            f = b.marker.option("flags") if b.marker else ""
            if f and f not in seen:
                seen.add(f)
                flags += shlex.split(f)
        proc = subprocess.Popen([*command, *flags, str(source)], cwd=ROOT, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        self.pending[name] = (group, command, suffix, proc, time.monotonic())

    def result(self, block):
        """(ok, message)."""
        while block.id not in self.results:
            name = next((n for n, (g, *_rest) in self.pending.items() if any(b.id == block.id for b in g)), None)
            if name is None:
                return False, "not compiled (an earlier compile of its group failed without naming it)"
            group, command, suffix, proc, _ = self.pending.pop(name)
            log, _ = proc.communicate(timeout=600)
            if proc.returncode == 0:
                for b in group:
                    self.results[b.id] = (True, "")
                continue
            named = blocks_named(log, group) or {b.id for b in group}
            for b in group:
                if b.id in named:
                    self.results[b.id] = (False, log[-6000:])
            rest = [b for b in group if b.id not in named]
            self._start(name + "r", rest, command, suffix)  # the others, without the failed ones
        return self.results[block.id]
