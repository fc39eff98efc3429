"""Every app's command line on one pattern (apps/common/shell.hpp): the common flags,
--print-config and --print-keys from the app's schema, bad values refused with exit
status 2, the binary and `python -m qfleet.<app>` alike, and the docs' key tables equal
to the schemas (QFLEET_UPDATE_DOCS=1 rewrites them)."""
import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

from conftest import app_binary

ROOT = pathlib.Path(__file__).resolve().parents[2]

# (module, binary variable, binary name, subcommand, the output key, docs page)
COMMANDS = [
    ("qfleet.meta_control", "QFLEET_META", "qfleet-meta", [], "output_dir", "docs/meta_control.md"),
    ("qfleet.classify", "QFLEET_CLASSIFY", "qfleet-classify", [], "out", "docs/classify.md"),
    ("qfleet.qgan", "QFLEET_QGAN", "qfleet-qgan", ["train"], "out", "docs/qgan.md"),
    ("qfleet.qgan", "QFLEET_QGAN", "qfleet-qgan", ["tournament"], "out", "docs/qgan.md"),
    ("qfleet.qgan", "QFLEET_QGAN", "qfleet-qgan", ["classify"], "out", "docs/qgan.md"),
    ("qfleet.qgan", "QFLEET_QGAN", "qfleet-qgan", ["suite"], "out", "docs/qgan.md"),
    ("qfleet.rl", "QFLEET_RL", "qfleet-rl", ["train"], "output_dir", "docs/rl.md"),
    ("qfleet.rl", "QFLEET_RL", "qfleet-rl", ["compare"], "output_dir", "docs/rl.md"),
]
IDS = [" ".join([c[2]] + c[3]) for c in COMMANDS]


def run_module(module, args):
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, timeout=300)


def run(command):
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("module,variable,name,sub,out_key,docs", COMMANDS, ids=IDS)
def test_common_flags_and_print_config(module, variable, name, sub, out_key, docs, tmp_path):
    binary = app_binary(variable, name)
    args = sub + ["--device", "cpu", "--threads", "1", "--seed", "7", "--out", str(tmp_path / "o"), "--quiet",
                  "--print-config"]
    if "--resume" in run([binary, *sub, "--help"]).stdout:
        args.append("--resume")
    r = run_module(module, args)
    assert r.returncode == 0, r.stderr
    cfg = json.loads(r.stdout)
    assert (cfg["device"], cfg["threads"], cfg["seed"], cfg[out_key]) == ("cpu", 1, 7, str(tmp_path / "o"))
    b = run([binary, *args])
    assert b.returncode == 0, b.stderr
    # the same C++ behind both (python -m qfleet.qgan suite draws the figures with its own Python)
    assert {**json.loads(b.stdout), "python": None} == {**cfg, "python": None}

    # --config FILE, then --set over it
    (tmp_path / "c.json").write_text(json.dumps({"seed": 11, "threads": 2}))
    b = run([binary, *sub, "--config", str(tmp_path / "c.json"), "--set", "seed=12", "--print-config"])
    assert b.returncode == 0, b.stderr
    assert (json.loads(b.stdout)["seed"], json.loads(b.stdout)["threads"]) == (12, 2)

    # "automatic" is the one spelling (the engine's, the command line's, Python's); "auto",
    # which the apps once took, is refused naming it
    b = run([binary, *sub, "--device", "automatic", "--print-config"])
    old = run([binary, *sub, "--device", "auto", "--print-config"])
    row = [line for line in run([binary, *sub, "--print-keys"]).stdout.splitlines() if line.startswith("| `device`")]
    if "automatic" in row[0].split("|")[2]:
        assert b.returncode == 0 and json.loads(b.stdout)["device"] == "automatic", b.stderr
        assert old.returncode == 2 and "key 'device': \"auto\" is spelled \"automatic\"" in old.stderr, old.stderr
    else:
        assert b.returncode == 2 and "key 'device': expected one of" in b.stderr, b.stderr


@pytest.mark.parametrize("module,variable,name,sub,out_key,docs", COMMANDS, ids=IDS)
def test_bad_values_are_refused_with_status_2(module, variable, name, sub, out_key, docs, tmp_path):
    cases = [(["--set", "seed=-1"], "key 'seed': expected an integer"),
             (["--set", "sed=3"], "unknown key 'sed' in --set (did you mean 'seed'?)"),
             (["--threads", "many"], "key 'threads': expected an integer"),
             (["--device", "tpu"], "key 'device': expected one of"),
             (["--set", "seed"], "--set expects key=value"),
             # bytes that are not UTF-8 (a --set value is taken as written): refused, not a
             # report that cannot be written after the run (found by tests/fuzz/fuzz_app_config.cpp)
             (["--set", f"{out_key}=out\udcd7"], f"key '{out_key}': expected a string (UTF-8)"),
             (["--device", "cpu\udcd7"], "key 'device': expected one of")]
    (tmp_path / "bad.json").write_text("{not json")
    cases.append((["--config", str(tmp_path / "bad.json")], "invalid JSON"))
    (tmp_path / "twice.json").write_text('{"seed": 3, "seed": 4}')  # not the last one silently
    cases.append((["--config", str(tmp_path / "twice.json")], "key \"seed\" appears twice"))
    (tmp_path / "unknown.json").write_text(json.dumps({"thread": 1}))
    cases.append((["--config", str(tmp_path / "unknown.json")], "did you mean 'threads'?"))
    binary = app_binary(variable, name)
    for args, needle in cases:
        r = run([binary, *sub, *args, "--print-config"])
        assert r.returncode == 2, (args, r.stderr)
        assert needle in r.stderr and r.stderr.count("\n") == 1, (args, r.stderr)
    r = run_module(module, sub + cases[1][0])  # and the Python entry alike
    assert r.returncode == 2 and cases[1][1] in r.stderr and "Traceback" not in r.stderr, r.stderr


BLOCK = re.compile(r"<!-- keys: (?P<cmd>[^>]*?) --print-keys [^>]*-->\n(?P<table>.*?)<!-- end keys -->\n", re.S)


def test_docs_list_each_schemas_keys():
    modules = {c[2]: c[0] for c in COMMANDS}
    pages = sorted({c[5] for c in COMMANDS})
    seen = set()
    for page in pages:
        path = ROOT / page
        text = path.read_text()

        def table(m):
            name, *sub = m["cmd"].split()
            seen.add(" ".join([name] + sub))
            r = run_module(modules[name], sub + ["--print-keys"])
            assert r.returncode == 0, r.stderr
            return m.group(0)[:m.start("table") - m.start()] + r.stdout + "<!-- end keys -->\n"

        new = BLOCK.sub(table, text)
        if os.environ.get("QFLEET_UPDATE_DOCS") == "1":
            path.write_text(new)
            continue
        assert new == text, (f"{page}'s key tables differ from the schemas: "
                             "QFLEET_UPDATE_DOCS=1 pytest -k docs_list rewrites them")
    assert seen == set(IDS) - {"qfleet-rl compare"}, seen  # (compare reads train's keys)


def assert_commit(commit):
    """A report's commit: the source tree's (a commit of this repository, "+dirty" with uncommitted
    changes), or "unknown" where the build had no git checkout."""
    if commit == "unknown":
        return
    sha = commit.removesuffix("+dirty")
    assert len(sha) == 40 and all(c in "0123456789abcdef" for c in sha), commit
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    found = subprocess.run(["git", "-C", root, "cat-file", "-e", f"{sha}^{{commit}}"], capture_output=True)
    assert found.returncode == 0 or not os.path.isdir(os.path.join(root, ".git")), commit


def test_binary_and_python_entry_run_alike(tmp_path):
    """The same thread policy (apps/common/main.hpp) and the same bits from both entries,
    and the common report header (apps/common/report_header.hpp) in the report."""
    binary = app_binary("QFLEET_QGAN", "qfleet-qgan")
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    args = ["train", "--epochs", "5", "--quiet", "--seed", "3"]
    for command, out in (([binary], "bin"), ([sys.executable, "-m", "qfleet.qgan"], "py")):
        r = subprocess.run([*command, *args, "--out", str(tmp_path / out)], capture_output=True, text=True,
                           timeout=300, env=env)
        assert r.returncode == 0, r.stderr
    bin_report, py_report = (json.loads((tmp_path / d / "report.json").read_text()) for d in ("bin", "py"))
    for report in (bin_report, py_report):
        assert report["runtime"]["omp_wait_policy"] == "passive"
        assert report["versions"]["qfleet"] and __import__("torch").__version__.startswith(report["versions"]["torch"])
        assert_commit(report["versions"]["commit"])
        assert report["machine"]["logical_cores"] >= 1 and report["build"]["cpu_isa"]
        assert report["seed"] == 3 and report["config"]["epochs"] == 5
        # the run's times: when it started (not when the report was written) and how long it took
        assert report["started_utc"] <= report["finished_utc"] and 0 < report["wall_seconds"] < 300
        assert report["timing"]["seconds"] == report["wall_seconds"]  # one figure for one thing
    assert bin_report["runtime"] == py_report["runtime"]
    def results(report):  # (wall times differ)
        return [{k: v for k, v in row.items() if k != "seconds"} for row in report["history"]], report["final"]
    assert results(bin_report) == results(py_report)


@pytest.mark.parametrize("module,variable,name,sub,out_key,docs", COMMANDS, ids=IDS)
def test_help_lists_every_preset_and_subcommand(module, variable, name, sub, out_key, docs):
    binary = app_binary(variable, name)
    text = run([binary, *sub, "--help"]).stdout
    keys = json.loads(run([binary, *sub, "--print-config"]).stdout)
    if "preset" in keys:  # the schema's presets, each named by --help
        for line in run([binary, *sub, "--preset", "no-such-preset", "--print-config"]).stderr.splitlines():
            presets = line.split("(presets: ")[1].rstrip(")").split(", ")
        assert all(p in text for p in presets) and "(the default)" in text, text
    if name == "qfleet-meta":
        assert "reproduce NAME|all" in text
    if name in ("qfleet-qgan", "qfleet-rl"):  # the binary's own --help names each subcommand
        top = run([binary, "--help"]).stdout
        for command in (["train", "tournament", "classify", "suite"] if name == "qfleet-qgan" else ["train", "bench-env", "compare"]):
            assert f"\n  {command}" in top, (command, top)


@pytest.mark.parametrize("module,variable,name,sub,out_key,docs", COMMANDS[:3], ids=IDS[:3])
def test_a_config_that_is_a_device_is_refused(module, variable, name, sub, out_key, docs, tmp_path):
    # qfleet::read_file_bounded: a device is refused without reading, a file over 64 MiB before it
    # is read; before, `--config /dev/zero --print-config` read until the memory ran out.
    binary = app_binary(variable, name)
    r = subprocess.run([binary, *sub, "--config", "/dev/zero", "--print-config"], capture_output=True, text=True,
                       timeout=20)
    assert r.returncode == 2 and r.stdout == "", r.stderr
    assert r.stderr == f"{name}: error: config: cannot read /dev/zero: it is a character device, not a regular file\n"
    big = tmp_path / "big.json"
    with open(big, "wb") as f:
        f.truncate((64 << 20) + 1)
    r = subprocess.run([binary, *sub, "--config", str(big), "--print-config"], capture_output=True, text=True,
                       timeout=20)
    assert r.returncode == 2 and "more than 64 MiB" in r.stderr and len(r.stderr.splitlines()) == 1, r.stderr


def test_a_circuit_file_that_is_a_device_is_refused(tmp_path):
    # qfleet-classify's `circuit` file goes through the bounded reader too (before: read whole).
    r = subprocess.run([app_binary("QFLEET_CLASSIFY", "qfleet-classify"), "--set", "circuit=/dev/zero", "--epochs", "1",
                        "--train-subset", "64", "--test-subset", "32", "--quiet", "--out", str(tmp_path / "o")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, r.stderr
    assert "the circuit file: cannot read /dev/zero: it is a character device, not a regular file" in r.stderr, r.stderr


@pytest.mark.parametrize("module,variable,name,sub,out_key,docs", COMMANDS, ids=IDS)
def test_help_shows_the_values_a_run_without_options_uses(module, variable, name, sub, out_key, docs):
    # --help showed each key's schema default: `qfleet-meta --help` said --iterations INT=300 while a
    # bare run (preset fast) does 800. It shows what --print-config of a bare run holds, and the
    # preset that sets it where that is not the key's default ("INT=800 (preset fast)").
    binary = app_binary(variable, name)
    bare = json.loads(run([binary, *sub, "--print-config"]).stdout)
    help_text = run([binary, *sub, "--help"]).stdout
    preset = bare.get("preset")
    shown = {}
    for line in help_text.splitlines():
        # "  --iterations INT=800 (preset fast)   meaning" (the meaning may follow one space on, or the next
        # line); an empty string shows no "=" at all
        m = re.match(r"\s+--([\w-]+)(?:,--[\w-]+)*(?: (\S+)(.*))?$", line)
        if m:
            shown[m[1].replace("-", "_")] = m[2].partition("=")[2] + m[3] if m[2] and "=" in m[2] else None
    table = {row.split("|")[1].strip().strip("`"): row.split("|")[3].strip().strip("`")
             for row in run([binary, *sub, "--print-keys"]).stdout.splitlines()[2:]}
    checked = 0
    for key, value in bare.items():
        if key == "preset":
            continue
        option = key.replace(".", "_")
        assert option in shown, (key, help_text)
        text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
        default = json.loads(table[key])
        if preset is not None and value != default:
            text += f" (preset {preset})"
        rest = shown[option]
        if text == "":
            assert rest is None, (key, rest)
        else:
            assert rest == text or (rest.startswith(text + " ") and not rest.startswith(text + " (preset")), (key, rest)
        checked += 1
    assert checked == len(bare) - (preset is not None)
    if name == "qfleet-meta":
        assert re.search(r"--iterations INT=800 \(preset fast\)", help_text), help_text
