#!/usr/bin/env python3
"""The CUDA kernels' resources as the compiler reports them (ptxas -v), one row a kernel.

For each kernel of qfleet's CUDA translation units, compiled for one architecture
(sm_90, the H100 and H200, by default) as the build compiles them: registers per
thread, stack frame (local memory: arrays the compiler could not keep in registers)
alone and with the functions it calls (a call the compiler did not inline, such as
sincos's slow path), spill stores and loads, static shared memory, and the warps a multiprocessor can
keep resident by the register count alone (65536 registers, allocated per warp in
units of 256; at most 64 warps). Needs nvcc, no GPU.

With --sass it also disassembles the code (nvdisasm: the CUDA toolkit's, or the
nvidia-cuda-nvdisasm wheel's) and counts each kernel's local-memory instructions
(LDL, STL: the stack's traffic), and --sass-lines N names the N source lines issuing
most of them (compiled with -lineinfo): what the stack holds, read without a GPU.

    scripts/ptxas_report.py [--arch 90] [--markdown] [--sass] [--sass-lines N] [FILE.cu ...]
"""
import argparse
import collections
import glob
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UNITS = ["src/cuda/sv_cuda.cu", "src/cuda/dm_cuda.cu", "src/cuda/open_cuda_k_qubit.cu",
         "src/cuda/open_cuda_k_thread.cu", "src/cuda/open_cuda_k_group.cu", "src/cuda/open_cuda_k_tile.cu"]
REGS_PER_SM, WARP_CAP, REG_UNIT = 65536, 64, 256


def demangle(names):
    filt = shutil.which("c++filt") or shutil.which("cu++filt")
    if not filt:
        return names
    out = subprocess.run([filt], input="\n".join(names), capture_output=True, text=True, check=True).stdout
    return out.splitlines()


def short(name):
    """sv_block_kernel<float>, open_tasks_kernel<float, FixedDim<4>> from the demangled signature."""
    m = re.search(r"(\w+_kernel)<(.*?)\s*>\s*\(", name)
    if not m:
        return name
    args = re.sub(r"\b\w+::", "", m.group(2))
    return f"{m.group(1)}<{args}>"


def resident_warps(regs):
    if regs == 0:
        return WARP_CAP
    per_warp = -(-regs * 32 // REG_UNIT) * REG_UNIT
    return min(WARP_CAP, REGS_PER_SM // per_warp)


def nvdisasm_path():
    """nvdisasm beside nvcc, on PATH, or from the nvidia-cuda-nvdisasm wheel (pip install)."""
    for p in [shutil.which("nvdisasm"), "/usr/local/cuda/bin/nvdisasm"]:
        if p and os.access(p, os.X_OK):
            return p
    for site in sys.path:
        for p in glob.glob(os.path.join(site, "nvidia", "cu*", "bin", "nvdisasm")):
            if os.access(p, os.X_OK):
                return p
    sys.exit("ptxas_report: --sass needs nvdisasm (the CUDA toolkit's, or: pip install nvidia-cuda-nvdisasm)")


def local_traffic(cubin):
    """{mangled kernel: (LDL count, STL count, Counter of (file:line, op))} from the disassembly."""
    text = subprocess.run([nvdisasm_path(), "-g", "-c", cubin], capture_output=True, text=True, check=True).stdout
    out, kern, loc = {}, None, "?"
    for line in text.splitlines():
        m = re.match(r"^\.text\.(\S+):", line)
        if m:
            kern = m.group(1)
            out[kern] = [0, 0, collections.Counter()]
            continue
        m = re.search(r'//## File "([^"]+)", line (\d+)', line)
        if m:
            loc = f"{os.path.basename(m.group(1))}:{m.group(2)}"
            continue
        m = re.search(r"\b(LDL|STL)\b", line)
        if m and kern:
            out[kern][0 if m.group(1) == "LDL" else 1] += 1
            out[kern][2][(loc, m.group(1))] += 1
    return out


def report(unit, arch, sass=False):
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    cubin = os.path.join("/tmp", f"qfleet_ptxas_{os.getpid()}_{os.path.basename(unit)}.cubin")
    target = ["-lineinfo", "-cubin", "-o", cubin] if sass else ["-c", "-o", os.devnull]
    cmd = [nvcc, "-std=c++17", "--expt-relaxed-constexpr", "-O3", "-DNDEBUG", "-Isrc", "-Iinclude",
           f"-gencode=arch=compute_{arch},code=sm_{arch}", "-Xptxas", "-v", unit] + target
    res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"ptxas_report: {unit} did not compile:\n{res.stderr[-3000:]}")
    traffic = {}
    if sass:
        try:
            traffic = local_traffic(cubin)
        finally:
            os.remove(cubin)
    rows, cur, about = [], None, None
    for line in res.stderr.splitlines():
        m = re.search(r"Compiling entry function '(\w+)'", line)
        if m:
            cur = {"mangled": m.group(1), "stack": 0, "spill_st": 0, "spill_ld": 0, "regs": 0, "smem": 0, "cumulative": 0}
            rows.append(cur)
            continue
        m = re.search(r"Function properties for (\w+)", line)
        if m:
            about = m.group(1)
            continue
        if cur is None:
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and about == cur["mangled"]:  # (a callee's own frame counts in the cumulative size)
            cur["stack"], cur["spill_st"], cur["spill_ld"] = map(int, m.groups())
        m = re.search(r"Used (\d+) registers", line)
        if m:
            cur["regs"] = int(m.group(1))
            s = re.search(r"(\d+) bytes smem", line)
            cur["smem"] = int(s.group(1)) if s else 0
            s = re.search(r"(\d+) bytes cumulative stack size", line)
            cur["cumulative"] = int(s.group(1)) if s else 0
    for r, d in zip(rows, demangle([r["mangled"] for r in rows])):
        r["name"] = short(d)
        r["unit"] = os.path.basename(unit)
        r["ldl"], r["stl"], r["lines"] = traffic.get(r["mangled"], [0, 0, collections.Counter()])
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arch", default="90", help="compute capability without the dot (default 90)")
    ap.add_argument("--markdown", action="store_true", help="a Markdown table (docs/architecture.md)")
    ap.add_argument("--sass", action="store_true", help="count local loads/stores in the disassembly")
    ap.add_argument("--sass-lines", type=int, default=0, metavar="N",
                    help="with --sass: the N source lines issuing most of each kernel's local loads/stores")
    ap.add_argument("units", nargs="*", default=UNITS, help="CUDA translation units (default: all of qfleet's)")
    a = ap.parse_args()
    sass = a.sass or a.sass_lines > 0
    rows = [r for u in a.units for r in report(u, a.arch, sass)]
    head = ["unit", "kernel", "registers", "stack frame (B)", "with callees (B)", "spills st/ld (B)", "static smem (B)",
            "warps/SM by registers"] + (["LDL/STL (SASS)"] if sass else [])
    table = [[r["unit"], r["name"], str(r["regs"]), str(r["stack"]), str(r["cumulative"]),
              f"{r['spill_st']}/{r['spill_ld']}", str(r["smem"]), str(resident_warps(r["regs"]))] +
             ([f"{r['ldl']}/{r['stl']}"] if sass else []) for r in rows]
    if a.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for t in table:
            print("| " + " | ".join(t) + " |")
    else:
        w = [max(len(x) for x in col) for col in zip(head, *table)]
        for t in [head] + table:
            print("  ".join(x.ljust(n) for x, n in zip(t, w)))
    for r in rows if a.sass_lines > 0 else []:
        print(f"\n{r['unit']} {r['name']}: the source lines of most local loads (LDL) and stores (STL)")
        for (loc, op), n in r["lines"].most_common(a.sass_lines):
            print(f"  {op} {n:5d}  {loc}")


if __name__ == "__main__":
    main()
