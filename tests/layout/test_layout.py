"""The source layout's rules, checked on every run (README, "Layout"):

- dependencies run one way: a room (a directory under src/) includes only rooms of a
  lower rank, so cli -> lab -> inspect -> workload / serve -> model / analysis -> profile
  -> backend / trace / text -> core, and no cycle can form;
- the backends' own directories (src/backend/cpu, src/backend/cuda) are private: nothing
  else in src/ includes them (the CUDA backend is a plugin reached through backend.h);
- each room is one library (ts_<room> in CMakeLists.txt) that links only libraries of
  lower rooms, and links (directly or through them) every room its sources include, so
  an include cannot work only because some other target happens to link the library;
- no source file over 800 lines, no function over 150.

Each rule is a function over {path: text}, tested first on a small synthetic tree where
it must fire, then on the real tree."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
SOURCE_SUFFIXES = (".h", ".cc", ".cu", ".cuh")

# A room may include rooms of a strictly lower rank (and itself). `tierscope` is the
# public include/ directory, below everything.
RANK = {
    "tierscope": 0,
    "core": 1,
    "backend": 2, "trace": 2, "text": 2,
    "profile": 3,
    "model": 4, "analysis": 4, "loadgen": 4,
    "workload": 5, "serve": 5,
    "inspect": 6,
    "lab": 7,
    "cli": 8,
}
# Public headers that belong to a room above core: the engine's API is the model's.
PUBLIC_HEADER_ROOM = {"tierscope/engine.h": "model"}
PRIVATE_SUBROOMS = ("backend/cpu", "backend/cuda")
MAX_FILE_LINES = 800
MAX_FUNCTION_LINES = 150

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def read_tree(root: Path) -> dict[str, str]:
    out = {}
    for sub in ("src", "include"):
        for p in sorted((root / sub).rglob("*")):
            if p.is_file() and p.suffix in SOURCE_SUFFIXES:
                out[p.relative_to(root).as_posix()] = p.read_text(errors="replace")
    return out


def room_of(path: str) -> str:
    parts = path.split("/")
    if parts[0] == "include":
        return PUBLIC_HEADER_ROOM.get("/".join(parts[1:]), "tierscope")
    return parts[1]


def included_room(include: str) -> str:
    return PUBLIC_HEADER_ROOM.get(include, include.split("/")[0])


def layering_violations(tree: dict[str, str]) -> list[str]:
    bad = []
    for path, text in tree.items():
        room = room_of(path)
        if room not in RANK:
            bad.append(f"{path}: room '{room}' has no rank in tests/layout/test_layout.py")
            continue
        for inc in INCLUDE.findall(text):
            if "/" not in inc:
                continue  # a sibling header in the same directory
            target = included_room(inc)
            if target == room:
                continue
            if target not in RANK:
                bad.append(f"{path}: includes \"{inc}\" from unknown room '{target}'")
            elif RANK[target] >= RANK[room]:
                bad.append(f"{path} ({room}, rank {RANK[room]}) includes \"{inc}\" "
                           f"({target}, rank {RANK[target]}): runs up or across the layers")
    return bad


def private_include_violations(tree: dict[str, str]) -> list[str]:
    bad = []
    for path, text in tree.items():
        for inc in INCLUDE.findall(text):
            for sub in PRIVATE_SUBROOMS:
                if inc.startswith(sub + "/") and not path.startswith("src/" + sub + "/"):
                    bad.append(f"{path} includes \"{inc}\", private to src/{sub}")
    return bad


def long_files(tree: dict[str, str]) -> list[str]:
    return [f"{p}: {t.count(chr(10))} lines" for p, t in tree.items()
            if t.count("\n") > MAX_FILE_LINES]


def _code_only(line: str) -> str:
    line = re.sub(r'"([^"\\]|\\.)*"', '""', line)
    line = re.sub(r"'([^'\\]|\\.)*'", "''", line)
    return line.split("//")[0]


def long_functions(tree: dict[str, str]) -> list[str]:
    """Top-level function bodies (free functions and members, defined in or out of a
    class) longer than the limit; a brace opened on a namespace, class, struct, enum or
    extern "C" line is a scope, not a body."""
    bad = []
    scope = re.compile(r'^\s*(namespace\b|extern "C"|(template\s*<.*>\s*)?(class|struct|union|enum)\b)')
    for path, text in tree.items():
        if path.startswith("include/"):
            continue
        stack: list[str] = []
        start = None
        for i, raw in enumerate(text.split("\n")):
            for c in _code_only(raw):
                if c == "{":
                    kind = "scope" if scope.match(raw) else "code"
                    if kind == "code" and "code" not in stack:
                        start = (i, raw.strip()[:80])
                    stack.append(kind)
                elif c == "}" and stack:
                    stack.pop()
                    if start is not None and "code" not in stack:
                        n = i - start[0] + 1
                        if n > MAX_FUNCTION_LINES:
                            bad.append(f"{path}:{start[0] + 1}: {n} lines: {start[1]}")
                        start = None
    return bad


LIBRARY = re.compile(r"add_library\((ts_\w+)\s+STATIC\s+([^)]*)\)", re.S)
LINKS = re.compile(r"target_link_libraries\((ts_\w+)\s+([^)]*)\)", re.S)


def cmake_violations(cmake: str, tree: dict[str, str]) -> list[str]:
    bad = []
    libs: dict[str, set[str]] = {}
    for lib, body in LIBRARY.findall(cmake):
        rooms = {f.split("/")[1] for f in body.split() if f.startswith("src/")}
        if rooms != {lib[3:]}:
            bad.append(f"{lib}: sources from rooms {sorted(rooms)}; a library is one room, ts_<room>")
        libs[lib] = rooms
    links: dict[str, set[str]] = {lib: set() for lib in libs}
    for lib, body in LINKS.findall(cmake):
        for dep in re.findall(r"\bts_\w+", body):
            links.setdefault(lib, set()).add(dep)
            if lib[3:] in RANK and dep[3:] in RANK and RANK[dep[3:]] >= RANK[lib[3:]]:
                bad.append(f"{lib} links {dep}: runs up or across the layers")

    def closure(lib: str) -> set[str]:
        seen, todo = set(), [lib]
        while todo:
            for d in links.get(todo.pop(), ()):
                if d not in seen:
                    seen.add(d)
                    todo.append(d)
        return seen

    for path, text in tree.items():
        if not path.startswith("src/") or path.startswith("src/backend/cuda/"):
            continue  # the GPU plugin is its own module
        room = room_of(path)
        lib = "ts_" + room
        if lib not in libs:
            bad.append(f"{path}: no library ts_{room} in CMakeLists.txt")
            continue
        for inc in INCLUDE.findall(text):
            target = included_room(inc) if "/" in inc else room
            need = "ts_core" if target == "tierscope" else "ts_" + target
            if target != room and need in libs and need != lib and need not in closure(lib):
                bad.append(f"{path} includes \"{inc}\" but {lib} does not link {need}")
    return bad


# --- the rules fire on a synthetic tree --------------------------------------------

SYNTHETIC = {
    "src/backend/kernels.h": '#include "model/tensor_map.h"\n#include "core/status.h"\n',
    "src/lab/lab.cc": '#include "cli/command.h"\n#include "inspect/kernel_run.h"\n',
    "src/model/bert.cc": '#include "backend/cuda/cuda_backend.h"\n#include "backend/backend.h"\n',
    "src/serve/api.cc": '#include "newroom/x.h"\n',
    "src/backend/cpu/gemm.cc": '#include "tierscope/engine.h"\n#include "tierscope/status.h"\n',
    "src/core/big.cc": "int x;\n" * (MAX_FILE_LINES + 1),
    "src/core/fn.cc": "namespace a {\nint F() {\n" + "  int y = 0;\n" * MAX_FUNCTION_LINES
                      + "  return 0;\n}\nint G() { return 1; }\n}  // namespace a\n",
}


def test_the_layering_rule_fires_on_an_include_that_runs_up():
    bad = layering_violations(SYNTHETIC)
    assert any("src/backend/kernels.h" in b and "model/tensor_map.h" in b for b in bad), bad
    assert any("src/lab/lab.cc" in b and "cli/command.h" in b for b in bad), bad
    assert any("unknown room 'newroom'" in b for b in bad), bad
    assert any("src/backend/cpu/gemm.cc" in b and "tierscope/engine.h" in b for b in bad), bad
    assert not any("tierscope/status.h" in b for b in bad), bad
    assert not any("inspect/kernel_run.h" in b or "core/status.h" in b for b in bad), bad


def test_the_private_backend_rule_fires_outside_the_backend():
    bad = private_include_violations(SYNTHETIC)
    assert bad == ['src/model/bert.cc includes "backend/cuda/cuda_backend.h", '
                   'private to src/backend/cuda'], bad


SYNTHETIC_CMAKE = """
add_library(ts_core STATIC src/core/fn.cc src/core/big.cc)
add_library(ts_backend STATIC src/backend/kernels.cc)
target_link_libraries(ts_backend PUBLIC ts_core)
add_library(ts_model STATIC src/model/bert.cc src/lab/x.cc)
target_link_libraries(ts_model PUBLIC ts_core ts_lab)
add_library(ts_lab STATIC src/lab/lab.cc)
target_link_libraries(ts_lab PUBLIC ts_core)
"""


def test_the_library_rule_fires_on_mixed_rooms_upward_links_and_missing_links():
    bad = cmake_violations(SYNTHETIC_CMAKE, SYNTHETIC)
    assert any(b.startswith("ts_model: sources from rooms ['lab', 'model']") for b in bad), bad
    assert "ts_model links ts_lab: runs up or across the layers" in bad, bad
    assert any(b.startswith('src/lab/lab.cc includes "inspect/kernel_run.h"') for b in bad) is False
    assert any("src/model/bert.cc" in b and "ts_model does not link ts_backend" in b for b in bad), bad
    assert any(b.startswith("src/serve/api.cc: no library ts_serve") for b in bad), bad


def test_the_size_rules_fire_on_a_long_file_and_a_long_function():
    assert [b.split(":")[0] for b in long_files(SYNTHETIC)] == ["src/core/big.cc"]
    fns = long_functions(SYNTHETIC)
    assert len(fns) == 1 and fns[0].startswith("src/core/fn.cc:2: 153 lines"), fns


# --- the real tree ------------------------------------------------------------------

@pytest.fixture(scope="module")
def tree() -> dict[str, str]:
    t = read_tree(REPO_ROOT)
    assert len(t) > 100, f"only {len(t)} source files under {REPO_ROOT}"
    return t


def test_includes_run_one_way_down_the_layers(tree):
    assert layering_violations(tree) == []


def test_each_room_is_a_library_linking_what_it_includes(tree):
    cmake = (REPO_ROOT / "CMakeLists.txt").read_text()
    assert len(LIBRARY.findall(cmake)) >= 12
    assert cmake_violations(cmake, tree) == []


def test_backend_directories_are_private(tree):
    assert private_include_violations(tree) == []


def test_no_source_file_over_800_lines(tree):
    assert long_files(tree) == []


def test_no_function_over_150_lines(tree):
    assert long_functions(tree) == []


def test_main_only_dispatches(tree):
    main = tree["src/cli/main.cc"]
    assert main.count("\n") < 100, "src/cli/main.cc should only dispatch to the commands"
    assert not INCLUDE.search(main) or all(
        i.startswith(("cli/", "core/", "tierscope/")) for i in INCLUDE.findall(main)), \
        INCLUDE.findall(main)
