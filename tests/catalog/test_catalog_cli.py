"""`python -m gpu <kernel>` for every catalog kernel: --json fields, exit 2 on bad arguments."""

import json

import pytest

from gpu.__main__ import main

TINY_ARGS = {
    "reduction": ["--n", "128", "--threads-per-block", "32"],
    "transpose": ["--n", "12"],
    "histogram": ["--n", "128", "--threads-per-block", "32", "--distribution", "single"],
    "stencil": ["--n", "12"],
    "matmul": ["--n", "8"],
}


@pytest.mark.parametrize("key", TINY_ARGS)
def test_kernel_json_has_the_documented_fields(key, capsys):
    assert main([key, *TINY_ARGS[key], "--repeats", "1", "--cpu", "numpy", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["experiment"] == key and data["agree"] is True and data["backend"] in ("cuda", "simulator")
    assert data["agreement_mode"] in ("exact", "bounded") and data["bytes_moved"] > 0 and data["device"]["name"]
    assert {"memory_gbps", "fp32_gflops"} <= set(data["roofs"])
    impls = data["implementations"]
    assert impls["numpy"]["agreement"]["passed"] and impls["numpy"]["seconds"] > 0
    step = next(v for v in impls.values() if v["kind"] == "step" and v["phases"])
    assert {"h2d", "kernel", "d2h", "total"} <= set(step["phases"]) and "alloc" not in step["phases"] and step["launch"]
    assert step["phases"]["kernel"]["few_samples"] is True and "held" in step["phases"]["kernel"]  # one repeat: marked
    assert "telemetry" in data and "l2_resident" in data
    assert {"gbps", "gflops", "fraction_of_peak", "vs_best_library"} <= set(step)


@pytest.mark.parametrize("args,fragment", [
    (["reduction", "--n", "0"], "at least 1"),
    (["reduction", "--n", "64", "--threads-per-block", "48"], "power of two"),
    (["transpose", "--n", "1e5"], "too large"),
    (["histogram", "--distribution", "normal"], "distribution must be one of"),
    (["matmul", "--cpu", "cobol"], "unknown CPU implementation"),
    (["stencil", "--no-such-flag"], "unrecognized arguments"),
])
def test_bad_arguments_exit_2_with_one_line(args, fragment, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert fragment in err and err.count("\n") == 1 and "Traceback" not in err
