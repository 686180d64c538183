"""The driver's class archive: built once by `mirrorline setup`, mapped by every driver JVM."""

from __future__ import annotations

from pathlib import Path

import pytest

from mirrorline.engine import class_archive

pytestmark = pytest.mark.integration


def _spark_jvm_pid(spark) -> int:
    return int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())


def test_the_session_jvm_maps_the_archive_setup_built(spark):
    """`make test` runs `mirrorline setup`, so the archive exists and the suite's JVM uses it."""
    archive = class_archive.archive_path()
    assert archive.is_file(), f"no class archive at {archive}: `mirrorline setup` builds it"
    maps = Path(f"/proc/{_spark_jvm_pid(spark)}/maps").read_text()
    # A JVM that cannot use an archive warns and unmaps it: mapped means used.
    assert str(archive) in maps
    assert class_archive.build() == archive  # there already: nothing to do
