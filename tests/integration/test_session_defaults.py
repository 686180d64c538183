"""The Spark session a driver runs on, with Mirrorline's defaults."""

from __future__ import annotations

import pytest

from support.kafka_io import Record, create_topic, produce, unique_name

pytestmark = pytest.mark.integration


def test_the_session_opens_no_web_ui(spark):
    """The suite's session is built with Mirrorline's defaults (`engine.session`)."""
    assert spark.sparkContext.getConf().get("spark.ui.enabled") == "false"
    assert spark.sparkContext.uiWebUrl is None


def test_the_jvm_that_runs_tasks_keeps_c2_from_sparks_own_code(spark):
    """The writer's plugin gives the JVM that runs the tasks (here the driver's,
    in local mode) its compiler directives as the executor starts
    (`io.mirrorline.writer.CompilerDirectives`): HotSpot's own list of them
    excludes Spark's core from C2 and keeps its SQL code."""
    jvm, gateway = spark._jvm, spark.sparkContext._gateway
    assert jvm.java.lang.System.getProperty("mirrorline.compilerDirectivesAdded") == "true"

    def array(of, *items):
        made = gateway.new_array(of, len(items))
        for at, item in enumerate(items):
            made[at] = item
        return made

    lang = jvm.java.lang
    # Through `MBeanServer.invoke` itself: py4j cannot call the platform server's
    # own class, which the JDK does not export.
    parameters = ("javax.management.ObjectName", "java.lang.String")
    parameters += ("[Ljava.lang.Object;", "[Ljava.lang.String;")
    invoke = lang.Class.forName("javax.management.MBeanServer").getMethod(
        "invoke", array(lang.Class, *map(lang.Class.forName, parameters))
    )
    printed = invoke.invoke(
        jvm.java.lang.management.ManagementFactory.getPlatformMBeanServer(),
        array(
            lang.Object,
            jvm.javax.management.ObjectName("com.sun.management:type=DiagnosticCommand"),
            "compilerDirectivesPrint",
            array(lang.Object, array(lang.String)),
            array(lang.String, "[Ljava.lang.String;"),
        ),
    )
    directives = printed.split("Directive:")
    excluded = next(d for d in directives if "org/apache/spark/*.*" in d)
    kept = next(d for d in directives if "org/apache/spark/sql/*.*" in d)
    assert "c2 directives:" in excluded and "Exclude:true" in excluded.split("c2 directives:")[1]
    assert "Exclude:false" in kept.split("c2 directives:")[1]


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
