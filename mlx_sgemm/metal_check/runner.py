"""Run one dispatch of a compiled kernel and read back its outputs and findings.

The runner (job.cpp) takes a job file (the dispatch and the buffers) and
writes the outputs; its stderr carries the findings, one line each, which
are turned into :class:`~mlx_sgemm.metal_check.findings.Finding` with their
source lines.
"""

from __future__ import annotations

import re
import struct
import subprocess
import tempfile
from pathlib import Path

from . import compiler, source_lines
from .binding import Buffer
from .findings import CompileError, Finding, Location, Report
from .translation import UNIT_FILE, Program

RUN_TIMEOUT_S = 120

_FINDING = re.compile(
    r"^METAL_HARNESS_FINDING (?P<check>\w+)\t(?P<kind>\w+)\t(?P<pc>[0-9a-f]+)\t(?P<line>\d+)\t"
    r"(?P<pc2>[0-9a-f]+)\t(?P<line2>\d+)\t(?P<count>\d+)\t(?P<message>.*)$", re.MULTILINE)
_DROPPED = re.compile(r"^METAL_HARNESS_DROPPED (\d+) (\d+)$", re.MULTILINE)
_INTERNAL = re.compile(r"^METAL_HARNESS_INTERNAL (.*)$", re.MULTILINE)
_STATS = re.compile(r"^METAL_HARNESS_STATS (?P<stats>.*)$", re.MULTILINE)
_UNIT_LINE = re.compile(re.escape(UNIT_FILE) + r":(\d+)")
_MESSAGE_LINE = re.compile(r"@line:(\d+)@")
# The array an index expression at this column of the finding's line indexes.
_MESSAGE_ARRAY = re.compile(r"@array:(\d+)@")
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
# The buffer or threadgroup variable a message is about (findings about
# different ones at one line stay apart).
_REGION = re.compile(r"buffer\(\d+\) \w+|threadgroup variable '\w+'")


def build(prog: Program) -> Path:
    """The runner for ``prog``; a kernel clang rejects raises CompileError, its
    diagnostics naming the lines of the user's files."""
    try:
        return compiler.build(prog.name, prog.unit)
    except compiler.CompilerFailed as e:
        def rename(m: re.Match) -> str:
            path, line = prog.locate(int(m[1]))
            return f"{path}:{line}"
        raise CompileError(_UNIT_LINE.sub(rename, e.diagnostics)) from None


def _write_job(path: Path, buffers: list[Buffer], grid, threadgroup, seed: int,
               align_end: bool) -> None:
    with open(path, "wb") as f:
        f.write(b"MHJOB003")
        f.write(struct.pack("<9Q", *grid, *threadgroup, seed, int(align_end), len(buffers)))
        for b in buffers:
            kind = 0 if not b.output else (1 if b.data is None else 2)
            f.write(b.name.encode()[:31].ljust(32, b"\0"))
            f.write(struct.pack("<4Q", kind, b.nbytes, b.offset, b.elem_size))
            if b.data is not None:
                data = b.data.tobytes()  # C order, whatever the array's strides
                if len(data) != b.nbytes:
                    raise compiler.HarnessError(f"{b.name}: {len(data)} bytes for a {b.nbytes}-byte buffer")
                f.write(data)


def _locations(prog: Program, exe: Path, sites: list[tuple[int, int]]) -> tuple[Location, ...]:
    out = []
    for pc, line in sites:
        if not pc and not line:
            continue
        if not line:
            line = source_lines.line_table(exe, UNIT_FILE).lookup(pc)
        if line:
            path, user_line = prog.locate(line)
            out.append(Location(path, user_line, prog.source_line(line), line))
        else:
            out.append(Location("(outside the kernel's source)", 0))
    return tuple(out)


def _name_lines(prog: Program, message: str) -> str:
    """The lines a runtime message names, as lines of the user's files."""
    def rename(m: re.Match) -> str:
        line = int(m[1])
        if not line:
            return "an unknown line"
        path, user_line = prog.locate(line)
        return f"{path}:{user_line}"
    return _MESSAGE_LINE.sub(rename, message)


def _name_array(message: str, locations: tuple[Location, ...]) -> str:
    """The array an out-of-bounds index names, read from its line at the
    column clang gives: ``'tile'``."""
    def rename(m: re.Match) -> str:
        text = locations[0].text if locations else ""
        found = _IDENTIFIER.match(text, int(m[1]) - 1) if int(m[1]) else None
        return f"'{found[0]}'" if found else "(unnamed)"
    return _MESSAGE_ARRAY.sub(rename, message)


def _findings(prog: Program, exe: Path, stderr: str) -> list[Finding]:
    merged: dict[tuple, Finding] = {}
    for m in _FINDING.finditer(stderr):
        sites = [(int(m["pc"], 16), int(m["line"])), (int(m["pc2"], 16), int(m["line2"]))]
        locations = _locations(prog, exe, sites)
        message = _name_array(_name_lines(prog, m["message"]), locations)
        f = Finding(m["check"], m["kind"], message, int(m["count"]), locations)
        # Sites that differ in the runtime can be one line here (an access
        # reported by the check and then by the fault it caused), and a race
        # between two lines is one whichever came first: merged.
        region = _REGION.search(f.message)
        key = (f.check, f.kind, frozenset(f.locations), region[0] if region else "")
        if key in merged:
            kept = merged[key]
            merged[key] = Finding(kept.check, kept.kind, kept.message, kept.count + f.count,
                                  kept.locations)
        else:
            merged[key] = f
    return list(merged.values())


def dispatch(
    prog: Program, buffers: list[Buffer], grid: tuple[int, int, int],
    threadgroup: tuple[int, int, int], *, seed: int = 0, align_end: bool = True,
) -> tuple[list[bytes] | None, Report]:
    """Run one dispatchThreads of ``prog``: the output buffers' bytes (None when
    the run stopped at a finding) and the report.

    ``align_end`` puts each buffer's end at a page boundary (False: its start);
    accesses outside a buffer are reported either way, but an out-of-bounds
    write the instrumentation cannot see (a copy the compiler makes with
    memcpy) is caught by the canary around the data.
    """
    if len(buffers) != prog.buffers:
        raise compiler.HarnessError(f"{prog.name} binds {prog.buffers} buffers, got {len(buffers)}")
    exe = build(prog)
    report = Report(prog.name, tuple(grid), tuple(threadgroup), [])
    with tempfile.TemporaryDirectory(dir=compiler.build_dir()) as tmp:
        job, out = Path(tmp) / "job", Path(tmp) / "out"
        _write_job(job, buffers, grid, threadgroup, seed, align_end)
        try:
            proc = subprocess.run([str(exe), str(job), str(out)], capture_output=True, text=True,
                                  timeout=RUN_TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired:
            report.completed = False
            report.findings.append(Finding("error", "timeout", f"no result after {RUN_TIMEOUT_S} s"))
            return None, report
        if m := _INTERNAL.search(proc.stderr):
            raise compiler.HarnessError(f"the runner refused the job: {m[1]}")
        report.findings = _findings(prog, exe, proc.stderr)
        if m := _DROPPED.search(proc.stderr):
            report.dropped, report.dropped_times = int(m[1]), int(m[2])
        if proc.returncode != 0:
            report.completed = False
            if not report.findings:
                report.findings.append(Finding(
                    "error", "crash", f"runner exited with status {proc.returncode}: "
                    f"{proc.stderr[-2000:]}"))
            return None, report
        data = out.read_bytes()
    if m := _STATS.search(proc.stderr):
        for item in m["stats"].split():
            key, value = item.split("=")
            report.stats[key] = int(value)
    outputs, offset = [], 0
    for b in buffers:
        if b.output:
            outputs.append(data[offset: offset + b.nbytes])
            offset += b.nbytes
    return outputs, report
