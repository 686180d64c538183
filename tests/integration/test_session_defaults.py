"""The Spark session a driver runs on, with Mirrorline's defaults."""

from __future__ import annotations

import pytest

from support.kafka_io import Record, create_topic, produce, unique_name

pytestmark = pytest.mark.integration


def test_the_session_opens_no_web_ui(spark):
    """The suite's session is built with Mirrorline's defaults (`engine.session`)."""
    assert spark.sparkContext.getConf().get("spark.ui.enabled") == "false"
    assert spark.sparkContext.uiWebUrl is None


def test_query_plans_are_not_compiled(two_clusters, spark):
    """Spark's whole-stage code generation is off for every flow (`engine.session`):
    the writer only reads a micro-batch's offset ranges from its plan, and a
    real-time query's plan has nothing to fuse. The batch a `foreachBatch` query
    ran has no whole-stage generated code in its plan."""
    east, _ = two_clusters
    topic = unique_name("plan")
    create_topic(east.bootstrap_servers, topic, partitions=1)
    produce(east.bootstrap_servers, topic, [Record(b"k", b"v", (), None, 0)])
    batches: list[int] = []
    query = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", east.bootstrap_servers)
        .option("assign", f'{{"{topic}": [0]}}')
        .option("startingOffsets", "earliest")
        .load()
        .writeStream.foreachBatch(lambda _frame, batch_id: batches.append(batch_id))
        .trigger(availableNow=True)
        .start()
    )
    try:
        assert query.awaitTermination(120), "the availableNow query did not finish in time"
        assert query.exception() is None
        plan = query._jsq.streamingQuery().lastExecution().executedPlan().toString()
    finally:
        query.stop()
    assert batches == [0]
    assert "Project" in plan  # the planner's projection over the Kafka scan
    assert "WholeStageCodegen" not in plan and "*(" not in plan, plan
