"""Each app page's quick start, replayed as a new user types it: every command line of the
first ```sh block of docs/meta_control.md, qgan.md, rl.md and classify.md, from a folder
holding the checkout's build/, apps/ and python/ (the paths the pages use), with no qfleet
variable set. An app's command runs with --print-config appended: it must parse and its
configuration resolve, so a renamed option, preset or subcommand, a binary the build does
not make, or a library the Python entry cannot find fails here. (The jobs themselves take
minutes each; their runs are tested app by app.) `python -m qfleet.<app>` lines run against
the source tree (PYTHONPATH=python, what a build-tree user sets) and, where qfleet is
installed, against the installed package."""
import os
import pathlib
import shlex
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PAGES = ["meta_control", "qgan", "rl", "classify"]
APPS = {"meta_control": "qfleet-meta", "qgan": "qfleet-qgan", "rl": "qfleet-rl", "classify": "qfleet-classify"}


def _build_dir():
    binary = os.environ.get("QFLEET_META")
    if not binary:
        pytest.skip("QFLEET_META (the qfleet-meta binary of the build under test) is not set")
    return pathlib.Path(binary).resolve().parents[2]


def quick_start(page):
    """The commands of the page's first ```sh block: continuations joined, comments dropped,
    `a && b` split."""
    text = (ROOT / "docs" / f"{page}.md").read_text()
    start = text.index("```sh\n") + len("```sh\n")
    return commands_of(text[start:text.index("```", start)])


def commands_of(block):
    block = block.replace("\\\n", " ")
    commands = []
    for line in block.splitlines():
        for part in line.split("&&"):
            words = shlex.split(part, comments=True)
            if words:
                commands.append(words)
    return commands


def app_command(words):
    """(program, argument list) for an app's own command line, else None; the program is
    the binary's path as written or the module of `python -m`."""
    while words and "=" in words[0] and not words[0].startswith("-"):
        words = words[1:]  # VAR=value before the command (the lines set nothing the replay needs)
    if words and words[0].startswith("./build/apps/"):
        return words[0], words[1:]
    if words[:2] == ["python", "-m"] and words[2] in {f"qfleet.{p}" for p in PAGES}:
        return words[2], words[3:]
    return None


def _workdir(tmp_path, build):
    # What the pages' relative paths name: the build, the app's data files, the package.
    (tmp_path / "build").symlink_to(build)
    for name in ("apps", "python"):
        (tmp_path / name).symlink_to(ROOT / name)
    (tmp_path / "run.json").write_text("{}\n")  # the page's `--config run.json`: a user's own file
    return tmp_path


def _clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if not (k.startswith("QFLEET_") or k == "PYTHONPATH")}
    env.update(extra)
    return env


def _installed():
    r = subprocess.run([sys.executable, "-c", "import qfleet, sys; sys.exit(0 if 'site-packages' in qfleet.__file__ "
                        "else 1)"], capture_output=True, env=_clean_env(), cwd="/")
    return r.returncode == 0


def _replay(commands, where, work):
    """Runs each app command of `commands` with --print-config; returns the lines it ran."""
    ran = []
    for words in commands:
        found = app_command(words)
        if not found:
            continue  # main.sh, plots, converters, benchmarks, torchrun: tested in their own files
        program, args = found
        runs = []
        if program.startswith("./build/"):
            binary = work / program
            assert binary.exists(), f"{where} names {program}, which the build does not make"
            runs.append(([str(binary), *args], _clean_env()))
        else:
            runs.append(([sys.executable, "-m", program, *args], _clean_env(PYTHONPATH=str(ROOT / "python"))))
            if _installed():
                runs.append(([sys.executable, "-m", program, *args], _clean_env()))
        for argv, env in runs:
            r = subprocess.run([*argv, "--print-config"], capture_output=True, text=True, timeout=120, env=env,
                               cwd=str(work))
            shown = " ".join(words)
            assert r.returncode == 0, f"{where}: `{shown}` --print-config: {r.stderr}"
            assert r.stdout.lstrip().startswith("{"), f"`{shown}`: no configuration printed: {r.stdout[:200]}"
            ran.append(shown)
    return ran


@pytest.mark.parametrize("page", PAGES)
def test_every_quick_start_command_parses_as_written(page, tmp_path):
    work = _workdir(tmp_path, _build_dir())
    ran = _replay(quick_start(page), f"docs/{page}.md", work)
    assert len(ran) >= 3, f"docs/{page}.md's quick start has {len(ran)} app commands: {ran}"
    assert sorted(p.name for p in work.iterdir()) == ["apps", "build", "python", "run.json"], \
        f"--print-config wrote files: {sorted(p.name for p in work.iterdir())}"


def test_the_pages_quick_starts_are_found():
    # The parser itself: every page's block yields its binary lines and its Python entry.
    for page in PAGES:
        programs = [a[0] for a in map(app_command, quick_start(page)) if a]
        assert any(pathlib.Path(p).name == APPS[page] for p in programs), page
        assert any(w[:3] == ["python", "-m", f"qfleet.{page}"] for w in quick_start(page)), page


def test_what_the_bare_binary_runs_is_what_the_pages_say():
    # README: the main job is `qfleet-meta --preset main` (scripts/main.sh) and a bare
    # `qfleet-meta` runs the schema's default preset; the app page says the same.
    import json
    default = json.loads((ROOT / "apps" / "meta_control" / "config.json").read_text())["default_preset"]
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert "The main job is `qfleet-meta --preset main`" in readme
    assert f"a bare `qfleet-meta` runs the preset `{default}`" in readme, default
    assert "set -- --preset main" in (ROOT / "scripts" / "main.sh").read_text()
    bare = [w for w in quick_start("meta_control") if w == ["./build/apps/meta_control/qfleet-meta"]]
    assert bare, "docs/meta_control.md's quick start has no bare qfleet-meta line"
    page = (ROOT / "docs" / "meta_control.md").read_text()
    assert f'qfleet-meta                                  # the preset "{default}" (the default)' in page


def test_what_main_sh_tells_a_user_to_run_next(tmp_path):
    # After the main job, scripts/main.sh prints how to build and run the other programs:
    # each binary it names is one the build makes, and each app command parses.
    text = (ROOT / "scripts" / "main.sh").read_text()
    start = text.index("This command builds qfleet-meta only.")
    commands = commands_of(text[start:text.index("EOF", start)].replace(".venv/bin/python", "python"))
    work = _workdir(tmp_path, _build_dir())
    binaries = [w[0] for w in commands if w[0].startswith("./build/")]
    assert "./build/tools/qfleet" in binaries and len(binaries) >= 4, binaries
    for b in binaries:
        assert (work / b).exists(), f"scripts/main.sh names {b}, which the build does not make"
    assert len(_replay(commands, "scripts/main.sh", work)) >= 4
