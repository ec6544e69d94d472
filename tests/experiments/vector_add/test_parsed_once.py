"""Vector add's N on its way from the form to the launch: parsed once (by its ``Param``), admitted, and the
simulator's cap applied in one place (``sizes``), once per step that needs the GPU's N; the run itself
parses and checks nothing again (it used to parse N twice, three times with the article's method)."""

from __future__ import annotations

import pytest

from gpu.catalog.base import Progress
from gpu.core import limits
from gpu.core.limits import InputError, load_config
from gpu.experiments.vector_add import experiment as vector_add
from gpu.service.admission import admit


@pytest.fixture
def counted(monkeypatch):
    """Every size parsed (``limits.parse_size``, by its name) and every cap applied (``kernel_n``), in order."""
    log: list[str] = []
    parse_size, kernel_n = limits.parse_size, vector_add.kernel_n

    def counting_parse(value, name="N"):
        log.append(f"parse {name}")
        return parse_size(value, name)

    def counting_cap(n, config=None, vectorised=False):
        log.append("cap")
        return kernel_n(n, config, vectorised)

    monkeypatch.setattr(limits, "parse_size", counting_parse)
    monkeypatch.setattr(vector_add, "kernel_n", counting_cap)
    return log


def test_n_is_parsed_once_admitted_and_capped_once_by_the_run_with_the_articles_method_too(counted):
    experiment = vector_add.EXPERIMENT
    params = experiment.parse({"n": "1e3", "repeats": "1", "cpu": "numpy", "article": True}, simulated=True)
    assert counted.count("parse N") == 1 and "cap" not in counted and params["n"] == 1000
    counted.clear()
    admit(experiment, params, load_config(simulated=True))
    assert counted == ["cap"], "admission counts the GPU's work at the capped N, asking sizes() once"
    counted.clear()
    run = experiment.execute(params, Progress())
    assert counted == ["cap"], f"the run parses nothing again and caps once: {counted}"
    assert run.n == 1000 and run.agree and run.article is not None and run.article.n == run.kernel_n


def test_a_raw_caller_still_gets_the_parsers_message(counted):
    with pytest.raises(InputError, match="N"):
        vector_add.run_vector_add("a lot", 256)
    assert counted[0] == "parse N"
