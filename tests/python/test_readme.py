"""The README keeps the shape a reader relies on: two commands first, and a block for each way
in (PyTorch, PennyLane, Gymnasium, the command line, C++) in "Use it from your tool". Every block
runs as written in test_docs_blocks.py (with the guides'); the C++ block is also built and run by
ctest (tests/CMakeLists.txt, `readme_snippet`)."""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
SECTION = "## Use it from your tool"


def blocks(text=None):
    """[(language, body)] of the quick-start section's fenced blocks."""
    text = text if text is not None else (ROOT / "README.md").read_text()
    start = text.index(SECTION)
    end = text.index("\n## ", start + len(SECTION))
    return re.findall(r"```(\w+)\n(.*?)```", text[start:end], flags=re.S)


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


def test_the_first_section_holds_exactly_the_two_commands():
    text = (ROOT / "README.md").read_text()
    first = text[text.index("\n## ") + 1:]
    first = first[:first.index("\n## ")]
    commands = [line.split("#")[0].strip() for body in re.findall(r"```sh\n(.*?)```", first, flags=re.S)
                for line in body.splitlines() if line.split("#")[0].strip()]
    assert commands == ["./scripts/main.sh", "./scripts/test.sh"], commands
    assert "./scripts/test.sh" in (ROOT / ".ci" / "run").read_text()
