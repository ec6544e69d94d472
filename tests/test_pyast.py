"""Every parse of Python source in the app goes through gpu/sim/pyast.py, one thread at a time: CPython 3.11's
AST constructor keeps its recursion depth per interpreter, and two threads parsing at once once refused a class's
correct kernel ("the checker could not check this source (SystemError: AST constructor recursion depth
mismatch)")."""

import ast
import re
import threading
from pathlib import Path

from gpu.sim import pyast

ROOT = Path(__file__).resolve().parent.parent
DIRECT = re.compile(r"\bast\.parse\(")  # (compile of a source string makes no AST objects: not affected)


def test_no_module_parses_but_through_pyast():
    found = []
    for folder in ("gpu", "ui", "pages"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path == ROOT / "gpu/sim/pyast.py":
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                code = line.split("#", 1)[0]
                if DIRECT.search(code):
                    found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not found, "parse through gpu.sim.pyast:\n" + "\n".join(found)


def test_parse_and_compile_give_what_ast_gives():
    source = "def f(x):\n    return [i * x for i in range(3)]\n"
    tree = pyast.parse(source, "f.py")
    assert ast.dump(tree) == ast.dump(ast.parse(source, "f.py"))
    namespace: dict = {}
    exec(pyast.compile_tree(tree, "f.py"), namespace)
    assert namespace["f"](2) == [0, 2, 4]
    assert ast.dump(pyast.parse_expression("a[i] + 1")) == ast.dump(ast.parse("a[i] + 1", mode="eval"))


def test_many_threads_parse_a_deep_source_at_once():
    source = "x = " + "(" * 60 + "1" + ")" * 60 + "\n" + "def g():\n" + "".join(
        f"    {'    ' * k}if x:\n" for k in range(20)) + "    " * 21 + "pass\n"
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(40):
                pyast.parse(source)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]


def test_streamlits_compile_of_a_page_waits_for_the_parser_lock(tmp_path):
    """Streamlit compiles a page through ast.parse (its "magic"): under the same lock (ui/script_compile.py), or a
    page's first compile could meet a learner's source being parsed (one failed so in a test of eight sessions)."""
    from streamlit.runtime.scriptrunner.script_cache import ScriptCache

    from ui.script_compile import guard

    guard()
    guard()  # idempotent
    page = tmp_path / "page.py"
    page.write_text("import streamlit as st\n'magic'\n")
    done = threading.Event()
    compiled = threading.Thread(target=lambda: (ScriptCache().get_bytecode(str(page)), done.set()))
    with pyast.held():
        compiled.start()
        assert not done.wait(0.5), "compiled while the parser lock was held"
    compiled.join(30)
    assert done.is_set()

