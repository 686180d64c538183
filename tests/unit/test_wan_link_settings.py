import pytest

from mirrorline.devlatency import Link, LinkError


def test_a_round_trip_is_split_between_the_two_directions():
    toxics = Link(latency_ms=50, jitter_ms=10, bandwidth_kib_s=1024).toxics()
    latency = {t["stream"]: t["attributes"] for t in toxics if t["type"] == "latency"}
    assert latency == {
        "upstream": {"latency": 25, "jitter": 5},
        "downstream": {"latency": 25, "jitter": 5},
    }
    assert {t["stream"] for t in toxics if t["type"] == "bandwidth"} == {"upstream", "downstream"}
    assert [t["type"] for t in Link(20).toxics()] == ["latency", "latency"]
    assert Link(50, 10, 1024).describe() == "50 ms round trip ± 10 ms, 1024 KiB/s"


@pytest.mark.parametrize("bad", [{"latency_ms": -1}, {"latency_ms": 5, "bandwidth_kib_s": 0}])
def test_nonsense_is_refused(bad):
    with pytest.raises(LinkError):
        Link(**bad)
