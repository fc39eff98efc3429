"""The README's "Use it from your tool" section runs as written: each ```python block in a fresh
interpreter that sees the source tree only (`PYTHONPATH=python`, as the README says), each
```sh block in bash from a folder where `./build` is the build under test. (Its C++ block is
compiled and run by ctest: tests/CMakeLists.txt, `readme_snippet`.) And the README keeps the
shape a reader relies on: two commands first, the sections in order."""
import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SECTION = "## Use it from your tool"


def _build_dir():
    binary = os.environ.get("QFLEET_META")
    if not binary:
        pytest.skip("QFLEET_META (the qfleet-meta binary of the build under test) is not set")
    return pathlib.Path(binary).resolve().parents[2]


def blocks(text=None):
    """[(language, body)] of the quick-start section's fenced blocks."""
    text = text if text is not None else (ROOT / "README.md").read_text()
    start = text.index(SECTION)
    end = text.index("\n## ", start + len(SECTION))
    return re.findall(r"```(\w+)\n(.*?)```", text[start:end], flags=re.S)


def _env(build):
    env = {k: v for k, v in os.environ.items() if not (k.startswith("QFLEET_") or k == "PYTHONPATH")}
    env["PYTHONPATH"] = str(ROOT / "python")
    if build != ROOT / "build":  # a build elsewhere is named; ROOT/build is found on its own
        env["QFLEET_BUILD_DIR"] = str(build)
    return env


def test_the_section_has_a_block_for_each_way_in():
    langs = [lang for lang, _ in blocks()]
    assert langs.count("python") >= 3 and "sh" in langs and "cpp" in langs, langs
    joined = "\n".join(body for _, body in blocks())
    for way in ("qfleet.QuantumLayer", "qfleet.OpenSystemLayer", 'qml.device("qfleet.qubit"', "gym.make_vec",
                "qfleet eval", "#include <qfleet/qfleet.hpp>"):
        assert way in joined, way


def test_the_parser_finds_blocks_of_the_section_only():
    text = "# t\n```sh\nno\n```\n" + SECTION + "\n```python\nyes\n```\n```sh\nalso\n```\n## Next\n```sh\nno\n```\n"
    assert blocks(text) == [("python", "yes\n"), ("sh", "also\n")]


@pytest.mark.parametrize("index", [i for i, (lang, _) in enumerate(blocks()) if lang == "python"])
def test_python_block_runs(index):
    build = _build_dir()
    for lib in ("adapters/torch/libqfleet_torch.so", "apps/rl/libqfleet_rl.so"):
        if not (build / lib).exists():
            pytest.skip(f"{build} has no {lib}")
    code = blocks()[index][1]
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, env=_env(build),
                       cwd=str(ROOT))
    assert r.returncode == 0, f"README block {index}:\n{code}\n{r.stderr[-3000:]}"


@pytest.mark.parametrize("index", [i for i, (lang, _) in enumerate(blocks()) if lang == "sh"])
def test_shell_block_runs(index, tmp_path):
    build = _build_dir()
    if not (build / "tools" / "qfleet").exists():
        pytest.skip(f"{build} has no qfleet CLI")
    (tmp_path / "build").symlink_to(build)
    code = blocks()[index][1]
    r = subprocess.run(["bash", "-euo", "pipefail", "-c", code], capture_output=True, text=True, timeout=300,
                       env=_env(build), cwd=str(tmp_path))
    assert r.returncode == 0, f"README block {index}:\n{code}\n{r.stderr[-3000:]}"
    assert '"grad_weights"' in r.stdout, r.stdout[:2000]


def test_the_first_section_holds_exactly_the_two_commands():
    text = (ROOT / "README.md").read_text()
    first = text[text.index("\n## ") + 1:]
    first = first[:first.index("\n## ")]
    commands = [line.split("#")[0].strip() for body in re.findall(r"```sh\n(.*?)```", first, flags=re.S)
                for line in body.splitlines() if line.split("#")[0].strip()]
    assert commands == ["./scripts/main.sh", "./scripts/test.sh"], commands
    assert "./scripts/test.sh" in (ROOT / ".ci" / "run").read_text()
