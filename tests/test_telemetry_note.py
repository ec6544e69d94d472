"""A run's telemetry beside its figures: a flagged run warns, a steady one says what was read."""

import pytest

from ui import telemetry_note


@pytest.fixture
def shown(monkeypatch):
    calls = []
    monkeypatch.setattr(telemetry_note.st, "warning", lambda text, **kw: calls.append(("warning", text)))
    monkeypatch.setattr(telemetry_note.st, "caption", lambda text, **kw: calls.append(("caption", text)))
    return calls


def test_a_flagged_run_warns_where_its_figures_are(shown):
    telemetry_note.show_telemetry(
        {"available": True, "flagged": True, "flags": ["SM clock dropped from 1,980 to 1,600 MHz while busy"]}, "sweep"
    )
    assert len(shown) == 1 and shown[0][0] == "warning"
    assert "clocks dropped during this sweep" in shown[0][1] and "1,600 MHz" in shown[0][1]


def test_an_unavailable_run_gets_one_caption_and_a_result_without_telemetry_nothing(shown):
    telemetry_note.show_telemetry(
        {"available": False, "reason": "telemetry unavailable: no GPU", "flagged": False, "flags": []}
    )
    assert shown == [("caption", "telemetry unavailable: no GPU")]
    telemetry_note.show_telemetry(None)
    assert len(shown) == 1
