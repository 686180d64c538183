"""The Spark side of Mirrorline: session, source query, executor writer, progress."""
