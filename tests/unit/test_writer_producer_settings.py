"""The writer producer: Mirrorline's defaults, the user's settings, the remote topics' limits,
and how many tasks of an executor share it."""

from types import SimpleNamespace

from mirrorline.engine.batch_writer import producer_settings
from mirrorline.engine.session import executor_task_slots
from mirrorline.engine.write_specs import partitions_per_executor


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


def _spark(master: str, parallelism: int, executor_cores: str | None = None):
    conf = {"spark.executor.cores": executor_cores} if executor_cores else {}
    context = SimpleNamespace(
        master=master,
        defaultParallelism=parallelism,
        getConf=lambda: SimpleNamespace(get=conf.get),
    )
    return SimpleNamespace(sparkContext=context)


def test_an_executors_task_slots_are_local_threads_or_its_cores():
    assert executor_task_slots(_spark("local[8]", 8)) == 8
    assert executor_task_slots(_spark("local[4]", 4, executor_cores="2")) == 4
    assert executor_task_slots(_spark("spark://h:7077", 6, executor_cores="2")) == 2
    # No spark.executor.cores: an executor may take every core the application has.
    assert executor_task_slots(_spark("spark://h:7077", 6)) == 6


def test_an_executor_writes_a_partition_per_task_slot_or_more_under_tasks_max():
    assert partitions_per_executor(6, None, 2) == 2
    assert partitions_per_executor(6, None, 8) == 6
    assert partitions_per_executor(6, 2, 2) == 6  # two tasks of three partitions each
    assert partitions_per_executor(7, 3, 1) == 3  # the largest task holds three
    assert partitions_per_executor(2, 10, 4) == 2  # more tasks allowed than partitions
