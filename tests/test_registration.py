"""The declaration is the only registration: what it names resolves, what runs keeps the
result protocol, progress steps go by id, every page has a link, and docstrings name
files that exist."""

from __future__ import annotations

import importlib
import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from gpu.catalog import registry
from gpu.catalog.base import Experiment, Param, Progress, checked_measures
from gpu.core.shape import SHAPES
from ui.navigation import all_links, declared_link
from ui.progress import PhaseProgress

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Good:
    agree: bool = True

    def to_dict(self) -> dict:
        return {}

    def to_frame(self):
        return None


@dataclass(frozen=True)
class NoFrame:
    agree: bool = True

    def to_dict(self) -> dict:
        return {}


def _declare(result_type, run=lambda p, progress: Good(), measures=lambda r: {"x_s": 1.0}) -> Experiment:
    return Experiment(key="probe", title="Probe", summary="a probe", params=(Param("n", "N", int, 1, "n"),),
                      run=run, work=lambda p: 1, measures=measures, result_type=result_type)


def test_a_result_type_without_the_protocol_is_refused_at_declaration():
    with pytest.raises(TypeError, match="NoFrame lacks to_frame"):
        _declare(NoFrame)


def test_a_run_returning_another_type_or_a_bad_agreement_fails_loudly():
    with pytest.raises(TypeError, match="returned a NoFrame; its declaration says Good"):
        _declare(Good, run=lambda p, progress: NoFrame()).execute({"n": 1})
    with pytest.raises(TypeError, match="agree is a str"):
        _declare(Good, run=lambda p, progress: Good(agree="yes")).execute({"n": 1})
    assert _declare(Good).execute({"n": 1}) == Good()


def test_measures_must_be_names_and_numbers():
    assert checked_measures(_declare(Good), Good()) == {"x_s": 1.0}
    with pytest.raises(TypeError, match="measures"):
        checked_measures(_declare(Good, measures=lambda r: {"x_s": "fast"}), Good())


def test_a_check_section_is_run_by_its_declaration_its_folders_check_face_or_at_the_defaults():
    from gpu.catalog.base import CheckSection
    from gpu.catalog.checking import runs_section
    from gpu.catalog.declare import catalog_section
    from gpu.report.check import section_run

    scaling, matmul = registry.get("scaling"), registry.get("matmul")
    assert section_run(scaling, scaling.check[0]).__name__ == "scaling_section"  # registered by scaling/check.py
    assert section_run(matmul, matmul.check[0]).__name__ == "matmul_section"  # named by the declaration
    assert section_run(matmul, CheckSection("matmul", at_defaults=True)).__name__ == "matmul_section"
    assert section_run(matmul, CheckSection("matmul", at_defaults=True)) is not matmul.check[0].run
    with pytest.raises(LookupError, match=r"nothing runs the check section 'orphan' of 'matmul'.*@runs_section"):
        section_run(matmul, CheckSection("orphan"))
    with pytest.raises(ValueError, match="not both"):
        CheckSection("matmul", catalog_section("matmul"), at_defaults=True)
    with pytest.raises(ValueError, match="is run by gpu.experiments.scaling.check.scaling_section already"):
        runs_section("scaling")(lambda ctx: None)


def test_faces_are_found_by_folder_and_only_faces():
    found = {m.__name__ for m in registry.faces("check")}
    assert found == {f"gpu.experiments.{name}.check" for name in ("launch", "scaling", "transfers", "vector_add")}
    with pytest.raises(ValueError, match="not an experiment folder's face"):
        registry.faces("experiment")


@pytest.mark.parametrize("experiment", registry.experiments(), ids=lambda e: e.key)
def test_everything_a_declaration_names_resolves(experiment):
    from gpu.catalog.render import _tables
    from gpu.report.check import section_run

    for section in experiment.check_sections():
        assert callable(section_run(experiment, section))
        assert section.records is None or callable(section.records)
        assert all(part.type in SHAPES for part in section.parts), "every result a section holds has a shape"
    summaries, prose = _tables()
    if experiment.key in ("scaling", "launch-sweep", "transfers"):  # the folders whose report words their results
        assert experiment.result_type in summaries and experiment.result_type in prose
    assert experiment.result_type is not None, f"{experiment.key} declares no result_type"
    assert experiment.page is not None and (ROOT / experiment.page.script).exists()


def test_the_registry_gives_the_order_the_declarations_give():
    keys = [e.key for e in registry.experiments()]
    assert keys[:2] == ["vector-add", "scaling"] and keys.index("launch-sweep") < keys.index("reduction")
    from gpu.catalog.declare import KERNELS

    assert KERNELS == ("reduction", "transpose", "histogram", "stencil", "matmul")


def test_progress_steps_are_matched_by_id_not_by_message():
    shown = []

    class Bar:
        def progress(self, value, text=None):
            shown.append((round(value, 2), text))

    tracker = PhaseProgress(Bar(), [("compile", 1.0), ("gpu", 3.0)], simulated=True)
    tracker("a message before any step")  # no step begun: the bar stays
    progress = Progress(say=tracker, started=tracker.started)
    progress.begin("gpu", "any wording at all")
    assert shown == [(0.25, shown[0][1])] and shown[0][1].startswith("Step 2 of 2: any wording at all")
    with pytest.raises(KeyError, match="'article'"):
        progress.begin("article", "a step the plan does not list")


def test_vector_add_begins_exactly_the_steps_it_plans():
    experiment = registry.get("vector-add")
    params = experiment.parse({"n": "64", "repeats": "1", "cpu": "numpy", "article": False}, simulated=True)
    begun: list[str] = []
    experiment.execute(params, Progress(started=begun.append))
    assert begun == [step for step, _estimate in experiment.plan(params, True)]


def test_every_page_file_has_a_sidebar_link():
    scripts = {link.script for link in all_links()}
    files = {"app.py", *(p.relative_to(ROOT).as_posix() for p in (ROOT / "pages").glob("*.py"))}
    assert files <= scripts, (
        f"pages without a link (declare PAGE = PageLink(...) in the file): {sorted(files - scripts)}"
    )


def test_a_page_link_must_be_plain_literals(tmp_path):
    page = tmp_path / "pages" / "9_X.py"
    page.parent.mkdir()
    page.write_text('from gpu.catalog.base import PageLink\nPAGE = PageLink("X", ":material/edit:", 55)\n')
    link = declared_link(page, tmp_path)
    assert (link.label, link.order, link.script) == ("X", 55, "pages/9_X.py")
    page.write_text('PAGE = PageLink(TITLE, ":material/edit:", 55)\n')
    with pytest.raises(ValueError, match="plain strings and numbers"):
        declared_link(page, tmp_path)


# A path a docstring or comment gives as a file of this repository: gpu/..., ui/..., pages/...
QUOTED_PATH = re.compile(r"\b((?:gpu|ui|pages|tests|docs|scripts|benchmarks)/[\w./-]+\.(?:py|md|json|toml))\b")


def test_the_path_pattern_finds_quoted_files():
    assert QUOTED_PATH.findall("derived by code in gpu/cli.py and ui/downloads.py.") == [
        "gpu/cli.py",
        "ui/downloads.py",
    ]


def test_no_docstring_or_document_names_a_missing_file():
    missing = []
    sources = [*ROOT.glob("gpu/**/*.py"), *ROOT.glob("ui/**/*.py"), *ROOT.glob("pages/*.py"), ROOT / "app.py",
               *ROOT.glob("docs/*.md"), ROOT / "README.md"]
    for path in sorted(sources):
        for quoted in QUOTED_PATH.findall(path.read_text()):
            if "<" not in quoted and "*" not in quoted and not (ROOT / quoted).exists():
                missing.append(f"{path.relative_to(ROOT)} names {quoted}")
    assert missing == []


def test_one_grid_size_helper_uses_real_occupancy_when_it_is_known():
    from gpu.kernels.geometry import blocks_for, resident_blocks

    assert blocks_for(1000, 256) == 4 and blocks_for(1024, 256) == 4
    assert resident_blocks(10**8, 256, 132) == 132 * 8  # 2048 threads per SM / 256
    assert (
        resident_blocks(10**8, 256, 132, "9.0", registers_per_thread=96) == 132 * 2
    )  # 96 x 256 registers: 2 blocks fit in 64 K
    assert resident_blocks(100, 256, 132) == 1  # never more blocks than the data needs


def test_one_float_parser_words_its_purpose():
    from gpu.core.limits import InputError, parse_positive, parse_seconds

    assert parse_positive("0.05", "the noise target") == 0.05 and parse_seconds("1e-3", "the budget") == 0.001
    with pytest.raises(InputError, match="the noise target must be more than 0, got '0'"):
        parse_positive("0", "the noise target")
    with pytest.raises(InputError, match="the budget must be a number of seconds such as 2 or 0.5"):
        parse_seconds("soon", "the budget")


def test_a_check_section_key_is_declared_once_and_each_declared_key_is_readable():
    from gpu.catalog.base import CheckSection
    from gpu.service.check_schema import SECTION_KEYS

    declared = registry.check_sections()
    assert {"breakdown", "scaling", "launch", "transfers", "reduction", "matmul"} <= set(declared) <= set(SECTION_KEYS)
    assert declared["breakdown"][0].key == "vector-add" and declared["matmul"][0].key == "matmul"
    twin = Experiment(key="twin-of-matmul", title="Twin", summary="s", params=(), run=lambda p, progress: None,
                      work=lambda p: 1, measures=lambda r: {},
                      check=(CheckSection("matmul", at_defaults=True),))
    with pytest.raises(ValueError, match="check section 'matmul' of 'twin-of-matmul' is already declared by 'matmul'"):
        registry.register(twin)
    assert "twin-of-matmul" not in [e.key for e in registry.experiments()]


def test_the_screenshot_script_photographs_the_sidebars_pages():
    spec = importlib.util.spec_from_file_location("screenshots", ROOT / "scripts" / "screenshots.py")
    screenshots = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(screenshots)
    pages = screenshots.pages()
    assert list(pages.values()) == [screenshots.url_path(link.script) for link in all_links()]
    assert pages["home"] == "" and pages["vector_add"] == "Vector_add" and pages["launch_config"] == "Launch_config"
