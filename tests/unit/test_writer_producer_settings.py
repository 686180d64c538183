"""The writer producer: Mirrorline's defaults, the user's settings, the remote topics' limits."""

from mirrorline.engine.batch_writer import producer_settings


def test_requirements_win_over_the_user_and_defaults_lose_to_it():
    merged = producer_settings({"acks": "1", "linger.ms": "20"})
    assert merged["acks"] == "all" and merged["enable.idempotence"] == "true"
    assert merged["linger.ms"] == "20" and merged["batch.size"] == "1000000"
    assert "max.request.size" not in merged


def test_batches_fit_every_remote_topic_and_records_any_of_them_takes():
    merged = producer_settings({}, {"a": 600_000, "big": 6_291_456})
    assert merged["batch.size"] == "600000"
    assert merged["max.request.size"] == "6291456"
    assert producer_settings({}, {"a": 500})["max.request.size"] == "1048576"


def test_a_users_max_request_size_is_kept():
    merged = producer_settings({"max.request.size": "2000000"}, {"big": 6_291_456})
    assert merged["max.request.size"] == "2000000"
