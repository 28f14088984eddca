"""Which line of the kernel an address in a runner belongs to.

The runtime reports where an access happened as a return address into the
kernel's code (relative to the executable's ELF header). The kernel's unit is
compiled with DWARF 4 line tables and inlining information; ``#line``
directives make its lines those of the MLX source. An access inside an inlined
function of the compatibility layer (an operator of a vector type, MLX's
elem_to_loc) has that function's line in the line table, so the chain of
inlined calls is walked out to the innermost call made from the kernel's own
source. Read with pyelftools (the ``check`` extra).
"""

from __future__ import annotations

import bisect
import functools
import os
from pathlib import Path


class LineTable:
    """Addresses of one executable to lines of one source file (by base name)."""

    def __init__(self, exe: Path, source_file: str):
        try:
            from elftools.elf.elffile import ELFFile
        except ModuleNotFoundError as e:  # the check extra's
            raise ModuleNotFoundError(
                "the Metal checker names source lines with pyelftools: "
                'pip install "mlx-sgemm[check]"', name=e.name) from None
        self.exe = exe
        self.source_file = source_file
        self._inlined: list[tuple[int, int, int, str, int]] | None = None  # low, high, depth, file, line
        rows: list[tuple[int, str, int]] = []
        with open(exe, "rb") as f:
            elf = ELFFile(f)
            # Relative addresses count from the ELF header's load address.
            self.base = min(seg["p_vaddr"] for seg in elf.iter_segments()
                            if seg["p_type"] == "PT_LOAD" and seg["p_offset"] == 0)
            if elf.has_dwarf_info():
                dwarf = elf.get_dwarf_info()
                for cu in self._kernel_units(dwarf):
                    self._read_lines(dwarf, cu, rows)
        rows.sort()
        self.addresses = [r[0] for r in rows]
        self.rows = rows

    def _kernel_units(self, dwarf):
        """The compilation units whose lines include the kernel's source (the
        C library's start-up code may carry debug information too)."""
        for cu in dwarf.iter_CUs():
            program = dwarf.line_program_for_CU(cu)
            if program is not None and self.source_file in self._file_names(program):
                yield cu

    @property
    def inlined(self) -> list[tuple[int, int, int, str, int]]:
        """The inlined calls' address ranges, read when first needed."""
        if self._inlined is None:
            from elftools.elf.elffile import ELFFile

            self._inlined = []
            with open(self.exe, "rb") as f:
                dwarf = ELFFile(f).get_dwarf_info()
                for cu in self._kernel_units(dwarf):
                    self._read_inlined(dwarf, cu)
        return self._inlined

    @staticmethod
    def _file_names(program) -> list[str]:
        header = program.header
        return [os.path.basename(entry.name.decode(errors="replace"))
                for entry in header["file_entry"]]

    def _read_lines(self, dwarf, cu, rows) -> None:
        program = dwarf.line_program_for_CU(cu)
        if program is None:
            return
        names = self._file_names(program)
        base_index = 1 if program.header["version"] < 5 else 0
        for entry in program.get_entries():
            state = entry.state
            if state is None:
                continue
            name = names[state.file - base_index] if 0 <= state.file - base_index < len(names) else ""
            # An end of sequence closes the range before it: no line after it.
            rows.append((state.address, "" if state.end_sequence else name, state.line))

    def _read_inlined(self, dwarf, cu) -> None:
        program = dwarf.line_program_for_CU(cu)
        names = self._file_names(program) if program is not None else []
        base_index = 1 if program is None or program.header["version"] < 5 else 0
        range_lists = dwarf.range_lists()

        def ranges(die):
            attrs = die.attributes
            if "DW_AT_low_pc" in attrs and "DW_AT_high_pc" in attrs:
                low = attrs["DW_AT_low_pc"].value
                high = attrs["DW_AT_high_pc"]
                # DWARF 4: high_pc is an offset from low_pc unless it is an address.
                end = high.value if high.form == "DW_FORM_addr" else low + high.value
                return [(low, end)]
            if "DW_AT_ranges" in attrs and range_lists is not None:
                cu_base = cu.get_top_DIE().attributes.get("DW_AT_low_pc")
                base = cu_base.value if cu_base else 0
                out = []
                for r in range_lists.get_range_list_at_offset(attrs["DW_AT_ranges"].value):
                    if hasattr(r, "base_address"):
                        base = r.base_address
                    else:
                        out.append((base + r.begin_offset, base + r.end_offset))
                return out
            return []

        def walk(die, depth):
            for child in die.iter_children():
                if child.tag == "DW_TAG_inlined_subroutine":
                    call_file = child.attributes.get("DW_AT_call_file")
                    call_line = child.attributes.get("DW_AT_call_line")
                    index = call_file.value - base_index if call_file else -1
                    name = names[index] if 0 <= index < len(names) else ""
                    for low, high in ranges(child):
                        self._inlined.append((low, high, depth, name,
                                             call_line.value if call_line else 0))
                    walk(child, depth + 1)
                elif child.has_children:
                    walk(child, depth)

        walk(cu.get_top_DIE(), 0)

    def lookup(self, relative_pc: int) -> int:
        """The line of ``source_file`` that the access at this return address
        belongs to; 0 when it has none (code outside the kernel's source)."""
        if not relative_pc:
            return 0
        address = self.base + relative_pc - 1  # inside the call, not after it
        i = bisect.bisect_right(self.addresses, address) - 1
        if i >= 0:
            _, name, line = self.rows[i]
            if name == self.source_file and line:
                return line
        # Inlined from elsewhere: the innermost call made from the kernel's source.
        calls = sorted((depth, name, line) for low, high, depth, name, line in self.inlined
                       if low <= address < high)
        for _, name, line in reversed(calls):
            if name == self.source_file and line:
                return line
        return 0


@functools.lru_cache(maxsize=32)
def line_table(exe: Path, source_file: str) -> LineTable:
    return LineTable(exe, source_file)
