"""The Spark session a driver runs on, with Mirrorline's defaults."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.integration


def test_the_session_opens_no_web_ui(spark):
    """The suite's session is built with Mirrorline's defaults (`engine.session`)."""
    assert spark.sparkContext.getConf().get("spark.ui.enabled") == "false"
    assert spark.sparkContext.uiWebUrl is None


def test_micro_batch_plans_are_not_compiled(spark):
    """The writer only reads a micro-batch's offset ranges from its plan: Spark need
    not compile the plan's projection for every batch (`engine.session`)."""
    assert spark.conf.get("spark.sql.codegen.wholeStage") == "false"
