package io.mirrorline.writer;

import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/** The executor-wide clean-up of the clients kept between batches. */
final class Housekeeping {
  private static final ScheduledExecutorService SWEEPER =
      Executors.newSingleThreadScheduledExecutor(runnable -> {
        Thread thread = new Thread(runnable, "mirrorline-sweeper");
        thread.setDaemon(true);
        return thread;
      });

  private Housekeeping() {}

  /** Run {@code closeIdle} every 30 seconds, and {@code closeAll} when the JVM exits. */
  static void register(String name, Runnable closeIdle, Runnable closeAll) {
    SWEEPER.scheduleWithFixedDelay(closeIdle, 30, 30, TimeUnit.SECONDS);
    Runtime.getRuntime().addShutdownHook(new Thread(closeAll, "mirrorline-close-" + name));
  }
}
