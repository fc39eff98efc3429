"""The repository speaks of qfleet only: no tracked text file speaks of how it was developed.

Every tracked text file (`git ls-files`) is read line by line and fails on four kinds of words:
  - the old word for what scripts/gpu_prepare.sh makes, also inside an identifier: it is the
    GPU bundle (`QFLEET_GPU_BUNDLE`), and prose says "holds", "keeps", "takes" or "brings";
  - a reference to a numbered entry of an issue tracker that is not part of the repository (a
    comment or page says what it means instead); another project's issue is cited by its
    address (https://github.com/OWNER/REPO/issues/N), which the rule passes;
  - a machine loaned to the developers, and a period of someone's work (while code's sessions,
    `scope="session"` or `tf.Session`, stay legal);
  - the field names of a development tool.
The words themselves are written below in pieces (Python joins adjacent string literals), so
that this file too says them only as patterns. Binary files (a NUL byte, or not UTF-8) are
skipped. Each exemption names the file, the rule and the exact lines it allows, and says why."""
import pathlib
import re
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]

RULES = {
    # (a word between non-alphanumerics, so that an environment variable or a function named
    # with it counts too)
    "bundle's old word": re.compile(r"(?<![A-Za-z0-9])(?:car" r"ry|car" r"ried)(?![A-Za-z0-9])", re.I),
    "numbered issue": re.compile(r"\bissues?\s*(?:no\.?\s*)?#?\s*\d+", re.I),
    "loaned machine": re.compile(r"\b(?:le" r"nt|le" r"nding)\b|\bbor" r"rowed\s+(?:\w+\s+){0,2}machines?\b", re.I),
    "period of work": re.compile(
        r"\b(?:this|that|a|one|each|every|same|next|last|earlier|later|previous|first|second|third|"
        r"fourth|fifth|gpu|device|work|helper|development)\s+sessions?\b", re.I),
    "tool words": re.compile(r"\b(?:budget" r"_left\w*|give" r"_back|files" r"_at|sub" r"agents?)\b", re.I),
}

# path -> [(rule, pattern a whole exempted line must match, why)]
EXEMPT = {
    # The Apache License 2.0, verbatim: its section 4(b) uses the word in its plain sense; a
    # license text is not ours to reword.
    "LICENSE": [("bundle's old word", re.compile(r"^\s*\(b\) You must cause any modified files to car" r"ry prominent notices$"),
                 "the Apache-2.0 text, verbatim")],
    # A committed results file, kept as the run wrote it (its numbers and strings are the record
    # of that run): the reason scripts/apps_figures.py wrote for the two keys it had no figure for.
    "bench/results/H200-2026-11-29-apps.json": [
        ("bundle's old word", re.compile(r'^\s*"qgan12_\w+_speedup_vs_pennylane_gpu": "PennyLane with torch on the GPU is not '
                                         r'car' r'ried to the GPU machine",$'), "a results file's recorded string")],
    # The same run's log: the probe's two lines as scripts/gpu_check.sh printed them then.
    "bench/results/H200-2026-11-29-check-apps.txt": [
        ("bundle's old word", re.compile(r"^car" r"ried (?:programs: .*|dependencies: \d+ packages, \d+ wheels)$"),
         "a recorded log's lines, as the script printed them")],
}


def _tracked():
    if shutil.which("git") is None:
        pytest.skip("git is not installed: the tracked files cannot be listed")
    run = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True)
    if run.returncode != 0:
        pytest.skip(f"{ROOT} is not a git checkout (no .git): the tracked files cannot be listed")
    return [p for p in run.stdout.decode().split("\0") if p]


def _text(path):
    """The file's text, or None for a binary file (a NUL byte, or not UTF-8) or a missing one."""
    try:
        data = path.read_bytes()
    except (FileNotFoundError, IsADirectoryError):  # deleted in the work tree, or a submodule
        return None
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def findings(rel, text):
    """["path:line: rule: the line"] for every line of `text` that breaks a rule."""
    out = []
    exempt = EXEMPT.get(rel, [])
    for number, line in enumerate(text.splitlines(), 1):
        for rule, pattern in RULES.items():
            if pattern.search(line) and not any(r == rule and allowed.match(line) for r, allowed, _ in exempt):
                out.append(f"{rel}:{number}: {rule}: {line.strip()[:160]}")
    return out


def test_tracked_files_speak_only_of_qfleet():
    bad = []
    for rel in _tracked():
        text = _text(ROOT / rel)
        if text is not None:
            bad += findings(rel, text)
    assert not bad, "words about how qfleet was developed, not about qfleet:\n" + "\n".join(bad)


def test_every_exemption_is_still_needed():
    """An exemption whose lines are gone (reworded, file removed) is removed too."""
    tracked = set(_tracked())
    for rel, rules in EXEMPT.items():
        assert rel in tracked, f"{rel} is exempted but not tracked"
        text = _text(ROOT / rel) or ""
        for rule, allowed, why in rules:
            assert any(RULES[rule].search(l) and allowed.match(l) for l in text.splitlines()), \
                f"{rel}: the exemption for {rule} ({why}) matches no line any more"


@pytest.mark.parametrize("line", [
    "see issue " "12", "(issue " "19)", "Issue " "27's workload", "issues " "19 and 20", "issue " "#50's rows",
    "the car" "ry's REVISION", "QFLEET_GPU_CAR" "RY=.gpu", "programs car" "ried there", "a machine is le" "nt",
    "the le" "nding rules", "a bor" "rowed GPU machine", "in the second GPU " "session", "this " "session's time",
    "budget" "_left_s", "give" "_back()", "files" "_at", "a sub" "agent"])
def test_the_rules_catch(line):
    assert findings("docs/x.md", line), line


@pytest.mark.parametrize("line", [
    "https://github.com/PennyLaneAI/pennylane/issues/4462", "@pytest.fixture(scope=\"session\")",
    "sess = tf.Session()", "errors hold the key's path", "the issue tracker", "talent", "lentil",
    "Warp Cycles Per Issued Instruction", "can issue according to", "carrying", "carries"])
def test_the_rules_pass(line):
    assert not findings("docs/x.md", line), line
