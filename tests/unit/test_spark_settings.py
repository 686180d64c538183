"""The Spark settings a driver starts with: `--spark-conf`, the jars executors load, the
address executors reach the driver at."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from mirrorline import jar_fetch
from mirrorline.cli.driver_cmd import parse_spark_conf
from mirrorline.cli.main import app
from mirrorline.engine import jvm_options, session
from mirrorline.jvm import JvmSetupError

CONFIG = """\
clusters = a, b
a.bootstrap.servers = 127.0.0.1:1
b.bootstrap.servers = 127.0.0.1:2
a->b.enabled = true
"""


def test_spark_conf_options_become_settings_and_the_last_repeat_wins():
    assert parse_spark_conf(
        [
            "spark.executor.memory=2g",
            " spark.executor.cores = 2",
            "spark.executor.extraJavaOptions=-Da=b -Dc=d",
            "spark.executor.memory=4g",
        ]
    ) == {
        "spark.executor.memory": "4g",
        "spark.executor.cores": "2",
        "spark.executor.extraJavaOptions": "-Da=b -Dc=d",
    }
    assert parse_spark_conf([]) == {}


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("spark.executor.memory", "expected KEY=VALUE"),
        ("=4g", "expected KEY=VALUE"),
        ("executor.memory=4g", "'executor.memory' is no Spark setting"),
    ],
)
def test_malformed_spark_conf_is_refused(value, message):
    with pytest.raises(typer.BadParameter, match=message):
        parse_spark_conf([value])


@pytest.fixture
def signal_handlers():
    """The driver command installs its own SIGINT/SIGTERM handlers: put pytest's back."""
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    yield
    for number, handler in saved.items():
        signal.signal(number, handler)


def _session_arguments(tmp_path: Path, monkeypatch, config_text: str, *options: str) -> dict:
    """What `mirrorline driver` passes to `build_spark_session` (stopped right there)."""
    config = tmp_path / "mm2.properties"
    config.write_text(config_text)
    calls = []

    def no_spark(**kwargs):
        calls.append(kwargs)
        raise JvmSetupError("stopped before starting Spark")

    monkeypatch.setattr(session, "build_spark_session", no_spark)
    result = CliRunner().invoke(
        app, ["driver", "-c", str(config), "--work-dir", str(tmp_path / "driver"), *options]
    )
    assert result.exit_code == 1, result.output
    assert "stopped before starting Spark" in result.stderr
    assert len(calls) == 1
    return calls[0]


def test_driver_passes_master_and_spark_conf_to_the_session(
    tmp_path: Path, monkeypatch, signal_handlers
):
    arguments = _session_arguments(
        tmp_path,
        monkeypatch,
        CONFIG,
        "--master", "spark://10.0.0.1:7077",
        "--spark-conf", "spark.executor.memory=3g",
        "--spark-conf", "spark.ui.port=4050",
    )  # fmt: skip
    assert arguments == {
        "app_name": "mirrorline driver",
        "master": "spark://10.0.0.1:7077",
        "conf": {"spark.executor.memory": "3g", "spark.ui.port": "4050"},
        "log_level": "WARN",
        "log_json": False,
        "real_time": False,
    }


def test_a_driver_with_a_real_time_flow_asks_for_its_session_settings(
    tmp_path: Path, monkeypatch, signal_handlers
):
    arguments = _session_arguments(
        tmp_path, monkeypatch, CONFIG + "a->b.data.path.mode = real-time\n"
    )
    assert arguments["real_time"] is True


def test_driver_refuses_a_malformed_spark_conf_before_anything_else(tmp_path: Path):
    result = CliRunner().invoke(
        app, ["driver", "-c", str(tmp_path / "absent.properties"), "--spark-conf", "memory"]
    )
    assert result.exit_code == 2
    assert "--spark-conf 'memory': expected KEY=VALUE" in result.stderr
    assert "Traceback" not in result.output


def _jar_cache(root: Path, sets: dict[str, list[str]]) -> Path:
    for name, jars in sets.items():
        (root / name).mkdir(parents=True)
        for jar in jars:
            (root / name / jar).write_bytes(b"")
    return root


def test_executor_jars_take_each_artifact_once_and_none_that_spark_ships(tmp_path, monkeypatch):
    spark_jars = _jar_cache(tmp_path / "pyspark", {"jars": ["scala-library-2.13.16.jar"]})
    monkeypatch.setattr(session, "pyspark_jars_dir", lambda: spark_jars / "jars")
    cache = _jar_cache(
        tmp_path / "cache",
        {
            "spark-kafka": [
                "kafka-clients-3.9.2.jar",
                "scala-library-2.13.15.jar",
                "spark-sql-kafka-0-10_2.13-4.2.0.jar",
            ],
            "writer": ["kafka-clients-3.9.1.jar", "mirrorline-writer-0.1.0.jar"],
        },
    )
    # Complete as fetched for this PySpark: nothing is fetched again.
    coordinates = jar_fetch.jar_set("spark-kafka").coordinates
    (cache / "spark-kafka" / jar_fetch.RESOLVED).write_text("\n".join(coordinates))
    monkeypatch.setenv("MIRRORLINE_JVM_LIB", str(cache))
    names = [j.name for j in session.executor_jars(["spark-kafka", "writer"])]
    assert names == [
        "kafka-clients-3.9.2.jar",
        "spark-sql-kafka-0-10_2.13-4.2.0.jar",
        "mirrorline-writer-0.1.0.jar",
    ]


def test_executor_jars_name_a_missing_jar_set(tmp_path, monkeypatch):
    monkeypatch.setenv("MIRRORLINE_JVM_LIB", str(tmp_path))
    with pytest.raises(JvmSetupError, match=r"no jars in .*writer: run `make jvm`"):
        session.executor_jars(["writer"])


@pytest.mark.parametrize(
    ("master", "expected"),
    [
        ("local[*]", {}),
        ("local[2]", {}),
        ("yarn", {}),
        ("spark://127.0.0.1:7077", {"spark.driver.host": "127.0.0.1"}),
        # Standby masters: the route to the first one.
        ("spark://127.0.0.1:7077,192.0.2.200:7077", {"spark.driver.host": "127.0.0.1"}),
        ("k8s://https://127.0.0.1:6443", {"spark.driver.host": "127.0.0.1"}),
        ("k8s://127.0.0.1:6443", {"spark.driver.host": "127.0.0.1"}),
        ("spark://no-such-host.invalid:7077", {}),
    ],
)
def test_the_driver_advertises_the_address_it_reaches_the_master_from(master, expected):
    assert session.cluster_settings(master) == expected


@pytest.mark.parametrize(
    ("memory", "young_mib"),
    [
        ("2g", 1228),
        ("1g", 614),
        ("1536m", 921),
        ("4096", 2457),  # a bare number is MiB, as Spark reads it
        (" 2G ", 1228),
        ("1t", 629145),
    ],
)
def test_the_young_generation_is_fixed_at_its_share_of_the_heap_and_tenures_early(
    memory, young_mib
):
    option = f"-Xmn{young_mib}m -XX:MaxTenuringThreshold=4"
    assert jvm_options.young_generation(memory, "spark.driver.memory") == option


def test_in_real_time_what_survives_one_collection_leaves_the_young_generation():
    option = jvm_options.young_generation("2g", "spark.driver.memory", real_time=True)
    assert option == "-Xmn1228m -XX:MaxTenuringThreshold=1"


def test_a_memory_size_spark_cannot_read_names_its_setting():
    with pytest.raises(JvmSetupError, match=r"spark.executor.memory = 'lots' is no memory size"):
        jvm_options.young_generation("lots", "spark.executor.memory")


@pytest.mark.parametrize(
    ("master", "options"),
    [
        ("local[*]", []),
        ("local[2]", []),
        ("spark://127.0.0.1:7077", ["-XX:TieredStopAtLevel=1"]),
        ("yarn", ["-XX:TieredStopAtLevel=1"]),
        ("k8s://https://127.0.0.1:6443", ["-XX:TieredStopAtLevel=1"]),
    ],
)
def test_a_driver_with_executors_of_its_own_compiles_with_c1_only(master, options):
    assert session.driver_compilation(master) == options


@pytest.mark.parametrize(
    ("ours", "theirs", "joined"),
    [
        (["io.mirrorline.P"], "", "io.mirrorline.P"),
        (["io.mirrorline.P"], " com.example.Q , ,io.mirrorline.P", "io.mirrorline.P,com.example.Q"),
        (["/a.jar", "/b.jar"], "/c.jar", "/a.jar,/b.jar,/c.jar"),
        ([""], "/plugins/p.jar", "/plugins/p.jar"),
    ],
)
def test_a_users_spark_list_is_added_to_mirrorlines(ours, theirs, joined):
    """`spark.jars` and `spark.plugins` of `--spark-conf` join Mirrorline's own."""
    assert session.added_to(ours, theirs) == joined
