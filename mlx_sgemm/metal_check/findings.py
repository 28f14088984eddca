"""What a checked dispatch found: findings with their source lines, and the
report that gathers them (printed like NVIDIA's compute-sanitizer prints its).

A finding belongs to one check:

* ``memcheck``: ``out_of_bounds`` (a read or write outside a buffer or a
  threadgroup variable), ``read_only`` (a write to an input);
* ``racecheck``: ``race`` (two threads of different simdgroups touch one byte
  of threadgroup memory between two barriers, at least one writing; two lanes
  of one simdgroup store to it in the same step; two threadgroups write one
  byte of an output without atomics);
* ``synccheck``: ``divergence`` (threads at different barriers, lanes at
  different simdgroup functions), ``deadlock``, ``nonuniform`` (lanes passing
  different arguments to one simdgroup matrix operation),
  ``barrier_after_return`` (a barrier some threads of the threadgroup returned
  before reaching), ``inactive_lanes`` (a simdgroup function called while
  lanes of the simdgroup returned or wait at a barrier), ``inactive_lane_read``
  (a shuffle reading such a lane);
* ``initcheck``: ``uninitialized`` (a read of threadgroup memory or of an
  output nothing has written), ``unwritten`` (output elements no thread
  wrote, handed back as whatever the memory held);
* ``launch``: ``resources`` (more threadgroup memory or threads than Metal
  allows); ``error``: the kernel crashed, ran too long, or used something the
  checker does not model.
"""

from __future__ import annotations

import dataclasses

CHECKS = ("memcheck", "racecheck", "synccheck", "initcheck")
_BANNER = "========="


@dataclasses.dataclass(frozen=True)
class Location:
    """A line of the kernel: of the user's file, or of the source MLX generates."""

    path: str
    line: int
    text: str = ""
    generated_line: int = 0  # the same line in the source MLX generates

    def __str__(self) -> str:
        return f"{self.path}:{self.line}" + (f": {self.text.strip()}" if self.text.strip() else "")


@dataclasses.dataclass(frozen=True)
class Finding:
    check: str
    kind: str
    message: str
    count: int = 1  # times it happened (at these locations)
    locations: tuple[Location, ...] = ()  # the access; for a race, both

    def __str__(self) -> str:
        times = f" ({self.count} times)" if self.count > 1 else ""
        lines = [f"{self.check}: {self.kind}{times}: {self.message}"]
        labels = ("at", "and") if len(self.locations) == 2 else ("at",)
        lines += [f"    {label} {loc}" for label, loc in zip(labels, self.locations)]
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class Report:
    """Every finding of one dispatch. ``completed`` is False when a finding
    ended the run (a deadlock, a fault): the outputs are then not returned."""

    kernel: str
    grid: tuple[int, int, int]
    threadgroup: tuple[int, int, int]
    findings: list[Finding]
    completed: bool = True
    dropped: int = 0  # distinct findings beyond what the runtime keeps
    dropped_times: int = 0  # how many times those happened
    stats: dict[str, int] = dataclasses.field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.completed and not self.findings and not self.dropped

    def by_check(self, check: str) -> list[Finding]:
        return [f for f in self.findings if f.check == check]

    def __str__(self) -> str:
        head = (f"{_BANNER} METAL CHECK {self.kernel}: grid {self.grid}, threadgroup "
                f"{self.threadgroup} (CPU emulation: logic only, no GPU timing)")
        out = [head]
        for f in self.findings:
            out += [f"{_BANNER} {line}" for line in str(f).splitlines()]
        if self.dropped:
            times = f", {self.dropped_times} times in all" if self.dropped_times > self.dropped else ""
            out.append(f"{_BANNER} ... and {self.dropped} more distinct findings not kept{times}")
        if not self.completed:
            out.append(f"{_BANNER} the run stopped at the finding above; no outputs")
        errors = len(self.findings) + self.dropped
        out.append(f"{_BANNER} ERROR SUMMARY: {errors} error{'s' if errors != 1 else ''}")
        return "\n".join(out)

    def to_dict(self) -> dict:
        return {
            "kernel": self.kernel, "grid": list(self.grid), "threadgroup": list(self.threadgroup),
            "ok": self.ok, "completed": self.completed, "dropped": self.dropped,
            "dropped_times": self.dropped_times,
            "stats": self.stats, "findings": [f.to_dict() for f in self.findings],
        }

    def assert_ok(self) -> None:
        """Raise AssertionError with the whole report when any check found
        something. (``assert report.ok, report`` would show pytest's repr of
        the report, cut at 240 characters; this shows the report.)"""
        if not self.ok:
            raise AssertionError(f"the checks found something:\n{self}")

    def raise_first(self) -> None:
        """Raise :class:`KernelError` for the first finding, if any."""
        if self.findings:
            raise KernelError.of(self.findings[0])


class KernelError(Exception):
    """The kernel did something a GPU would not forgive. ``kind`` says what."""

    def __init__(self, kind: str, line: int, message: str, source_line: str = "",
                 finding: Finding | None = None):
        self.kind = kind
        self.line = line
        self.message = message
        self.source_line = source_line
        self.finding = finding
        where = f" at line {line}: {source_line.strip()}" if line and source_line else ""
        super().__init__(f"{kind}{where}: {message}")

    @classmethod
    def of(cls, finding: Finding) -> KernelError:
        loc = finding.locations[0] if finding.locations else None
        return cls(finding.kind, loc.generated_line if loc else 0, finding.message,
                   loc.text if loc else "", finding)


class CompileError(KernelError):
    """Clang rejected the kernel; ``message`` holds its diagnostics, with lines
    named as in the user's files where they came from one."""

    def __init__(self, message: str):
        super().__init__("compile", 0, message)
