"""excerpts.excerpt: lines of the kernel sources found by pattern, for the notebook's chapters."""

import pytest

from mlx_sgemm.bench import excerpts
from mlx_sgemm.build import sources


def test_a_brace_block_from_its_start_line():
    shown = excerpts.excerpt("kernels/cuda/naive.cu", r"const int row = t\.row0")
    lines = sources.path("cuda", "naive.cu").read_text().splitlines()
    assert shown.text == "\n".join(lines[shown.first - 1:shown.last])
    assert shown.text.startswith("const int row") and shown.text.endswith("}")
    assert "sum += t.A(row, k) * t.B(k, col);" in shown.text
    assert shown.last == len(lines)  # the if block closes the file


def test_an_end_pattern_ends_at_its_first_line_after_the_start():
    # start_if_any( is on three lines after the start: the excerpt ends at the first.
    shown = excerpts.excerpt("kernels/cuda/sgemm/async_copy.cuh", r"// The first STAGES - 1 k-tiles",
                             end=r"start_if_any\(")
    assert shown.text.splitlines()[0].lstrip().startswith("// The first STAGES - 1 k-tiles")
    assert shown.text.splitlines()[-1].strip() == "for (int kt = 0; kt < STAGES - 1; ++kt) start_if_any(kt);"
    assert shown.last - shown.first < 10


def test_package_files_and_markdown():
    shown = excerpts.excerpt("mlx_sgemm/dispatch/kernel_choice.py", r"^def choose_with_rule\(",
                             end=r'return specs\.spec\("tile_async", backend\)')
    markdown = shown._repr_markdown_()
    assert markdown.startswith(f"`mlx_sgemm/dispatch/kernel_choice.py`, lines {shown.first}-{shown.last}")
    assert "```python\ndef choose_with_rule(" in markdown
    assert "```cuda" in excerpts.excerpt("kernels/cuda/naive.cu", r"const int row")._repr_markdown_()
    assert "```cpp" in excerpts.excerpt("kernels/metal/naive.metal", r"const int row")._repr_markdown_()


@pytest.mark.parametrize("start, end, message", [
    (r"no such line anywhere", None, "matches no line"),
    (r"#include", None, "matches lines"),  # several: ambiguous
    (r"const int row", r"no such end", "end pattern"),
])
def test_a_pattern_that_does_not_pin_one_place_fails(start, end, message):
    with pytest.raises(LookupError, match=message):
        excerpts.excerpt("kernels/cuda/tile_threads.cu" if start == "#include" else "kernels/cuda/naive.cu",
                         start, end)


def test_braces_in_comments_and_strings_do_not_count(tmp_path, monkeypatch):
    source = tmp_path / "k.cu"
    source.write_text("int f() {  // a { in a comment\n"
                      '  const char* s = "}";\n'
                      "  if (x) { y(); }\n"
                      "}\n"
                      "int after;\n")
    monkeypatch.setattr(excerpts, "resolve", lambda path: source)
    shown = excerpts.excerpt("kernels/k.cu", r"int f\(\)")
    assert (shown.first, shown.last) == (1, 4)
    source.write_text("int f() {\n  never closed;\n")
    with pytest.raises(LookupError, match="no brace block closes"):
        excerpts.excerpt("kernels/k.cu", r"int f\(\)")


def test_only_kernels_and_the_package_are_quoted():
    with pytest.raises(ValueError, match="kernels/... or mlx_sgemm/..."):
        excerpts.resolve("README.md")
