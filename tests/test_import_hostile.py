"""`gpu history import` (and History's upload, the same importer) on hostile check files: every one is
refused with exit 2 naming the field, or imported; none is a crash of the lab (exit 3); nothing the file
says reaches the terminal unescaped; the same content is recognised however its bytes are laid out."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpu.__main__ import main
from gpu.service.check_schema import history_records, parse_check_bytes
from gpu.service.importer import ImportProblem, import_check
from gpu.service.references import Provenance, ReferenceRun
from gpu.service.store import open_store

ROOT = Path(__file__).resolve().parents[1]
CHECK = ROOT / "benchmarks" / "h200" / "check.json"
RAW = CHECK.read_bytes()
UNSAFE = ("\x1b", "\u202e", "\r", "\x07")


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNEL_LAB_DB", str(tmp_path / "h.sqlite3"))
    monkeypatch.setenv("KERNEL_LAB_LOCK_DIR", str(tmp_path / "locks"))


def _import(tmp_path: Path, raw: bytes, capsys) -> tuple[int, str]:
    path = tmp_path / "check.json"
    path.write_bytes(raw)
    code = main(["history", "import", str(path)])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def _replace(old: bytes, new: bytes) -> bytes:
    assert old in RAW, old
    return RAW.replace(old, new, 1)


HOSTILE = {
    "a 5,000-digit integer": (_replace(b'"warmup": 1', b'"warmup": ' + b"9" * 5000),
                              "`sections.breakdown.run.policy.warmup` is a number 5,000 characters long"),
    "a 5,000-digit negative integer in a generic place": (
        _replace(b'"sections": {', b'"sections": {"methodology": {"title": "m", "passed": true, "x": -' + b"7" * 5000
                 + b"},"), "`sections.methodology.x` is a number 5,001 characters long"),
    "a fraction of 5,000 digits": (_replace(b'"samples_s": [', b'"samples_s": [0.' + b"1" * 5000 + b", "),
                                   "samples_s[0]` is a number 5,002 characters long"),
    "a timing no clock can take": (_replace(b'"samples_s": [', b'"samples_s": [5e-324, '),
                                   "samples_s[0]` is 5e-324 s; a time is 0 or between 1e-09 s"),
    "a timing of a century": (_replace(b'"samples_s": [', b'"samples_s": [3.2e9, '), "samples_s[0]` is 3200000000.0 s"),
    "an infinite number where no type reads it": (
        _replace(b'"host": {', b'"host": {"x": 1e999, '), "`host.x` must be finite"),
    "a bandwidth above the device's peak": (
        _replace(b'"kernel_bandwidth_gbps": ', b'"kernel_bandwidth_gbps": 1e9, "was": '),
        "kernel_bandwidth_gbps` is 1e+09 GB/s; a bandwidth is 0 to 19,257 (4 × the device's 4,814 GB/s memory peak)"),
    "a duplicated key": (_replace(b'"quick": false', b'"quick": false, "quick": true'),
                         "the key 'quick' appears twice"),
    "a run without its kernel phase": (_replace(b'"kernel": {', b'"kernel_": {'),
                                       "the GPU phases lack kernel"),
    "a number written as text": (_replace(b'"warmup": 1', b'"warmup": "1"'),
                                 "`sections.breakdown.run.policy.warmup` must be a whole number, got text"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE), ids=str)
def test_a_hostile_check_file_is_refused_with_exit_2_naming_the_field(case, tmp_path, capsys):
    raw, said = HOSTILE[case]
    code, output = _import(tmp_path, raw, capsys)
    assert code == 2, output
    assert said in output and "the lab itself failed" not in output
    assert open_store().count() == 0


def test_the_same_content_is_one_import_whatever_its_bytes(tmp_path, capsys):
    assert _import(tmp_path, RAW, capsys)[0] == 0
    store = open_store()
    runs = store.count()
    spaced = RAW + b" "
    reordered = json.dumps(dict(reversed(list(json.loads(RAW).items())))).encode()
    for again in (RAW, spaced, reordered):
        code, output = _import(tmp_path, again, capsys)
        assert code == 2 and "was already imported" in output, output
    assert store.count() == runs


def test_a_device_name_and_keys_of_control_characters_never_print_raw(tmp_path, capsys):
    hostile_name = "H\x1b[2J\x1b[31mEVIL\u202e\rGPU\x07"
    data = json.loads(RAW)
    data["device"]["name"] = hostile_name
    for section in data["sections"].values():
        for part in ("run", "sweep"):
            if isinstance(section.get(part), dict) and "device" in section[part]:
                section[part]["device"]["name"] = hostile_name
    code, output = _import(tmp_path, json.dumps(data).encode(), capsys)
    assert code == 0, output
    assert "\\x1b[2J" in output and not any(ch in output for ch in UNSAFE)
    assert main(["history"]) == 0
    listing = capsys.readouterr().out
    assert "\\u202e" in listing and not any(ch in listing for ch in UNSAFE)

    data["sections"]["\x1b[31m\u202ebad"] = {"title": "x", "passed": True}
    code, output = _import(tmp_path, json.dumps(data).encode(), capsys)
    assert code == 2 and "unknown experiment '\\x1b[31m\\u202ebad'" in output
    assert not any(ch in output for ch in UNSAFE)


# --- the fuzz: random and mutated check files ------------------------------------------------

TOKENS = [b"{", b"}", b"[", b"]", b",", b":", b'"', b"-", b"1e999", b"9" * 400, b"NaN", b"null", b"true", b"\\u0000",
          b"\\ud800", b"\xff", b"\x1b", b'"samples_s"', b'"n"', b'"device"', b"0.0", b"-1", b"1e-320", b" "]


@st.composite
def mutated_check(draw) -> bytes:
    raw = bytearray(RAW)
    rng = random.Random(draw(st.integers(0, 2**32)))
    for _ in range(draw(st.integers(1, 4))):
        at = rng.randrange(len(raw))
        how = draw(st.sampled_from(("insert", "delete", "replace", "truncate")))
        token = draw(st.sampled_from(TOKENS))
        if how == "insert":
            raw[at:at] = token
        elif how == "delete":
            del raw[at:at + rng.randint(1, 40)]
        elif how == "replace":
            raw[at:at + len(token)] = token
        else:
            del raw[at:]
    return bytes(raw)


@st.composite
def mutated_values(draw) -> bytes:
    """A valid check with one value anywhere replaced by something else JSON can hold."""
    data = json.loads(RAW)
    rng = random.Random(draw(st.integers(0, 2**32)))
    parent, key, node = None, None, data
    for _ in range(rng.randint(1, 9)):  # down into the file, then one value there
        children = list(node.items()) if isinstance(node, dict) else list(enumerate(node))
        if not children:
            break
        containers = [c for c in children if isinstance(c[1], dict | list)]
        if containers and rng.random() < 0.8:
            parent, (key, node) = node, rng.choice(containers)
            continue
        parent, (key, _value) = node, rng.choice(children)
        break
    if parent is not None:
        parent[key] = draw(st.recursive(
            st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
            lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
            max_leaves=5,
        ))
    return json.dumps(data).encode()


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(raw=st.one_of(mutated_check(), mutated_values(), st.binary(max_size=200)))
def test_no_check_file_crashes_the_import(raw):
    """The schema, the rebuild and the History rows on their own, without the importer's last net."""
    try:
        data = parse_check_bytes(raw)
    except ImportProblem as exc:
        assert not any(ch in str(exc) for ch in UNSAFE), str(exc)
        return
    ReferenceRun.from_check("fuzz", data, Provenance.of_check(data, source="fuzz")).rebuild_all()
    assert all(isinstance(r, dict) for r in history_records(data, source="fuzz", sha256=""))


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                                 HealthCheck.function_scoped_fixture])
@given(raw=st.one_of(mutated_check(), mutated_values()))
def test_no_check_file_makes_the_cli_exit_3(raw, tmp_path, capsys):
    code, output = _import(tmp_path, raw, capsys)
    assert code in (0, 2), output


def test_an_import_never_saves_part_of_a_refused_file(tmp_path):
    with pytest.raises(ImportProblem):
        import_check(open_store(), _replace(b'"warmup": 1', b'"warmup": 1e999'))
    assert open_store().count() == 0
