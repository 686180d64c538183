package io.mirrorline.writer;

import java.io.IOException;
import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Map;
import javax.management.JMException;
import javax.management.ObjectName;
import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.apache.spark.api.plugin.SparkPlugin;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps HotSpot's optimising compiler (C2) for the code that moves records, in every
 * JVM that runs Mirrorline's tasks; a Spark plugin ({@code spark.plugins}).
 *
 * <p>Why: a JVM that runs tasks executes thousands of Spark's, Scala's and Netty's
 * methods a few times a second (scheduling in a local-mode driver, task launch
 * and results, heartbeats, RPC, Java serialization of closures). With
 * tiered compilation each of them reaches C2's threshold in turn, for minutes after
 * the start, and is compiled again when its profile changes: in a local-mode driver
 * the compilers took 13-16 CPU s of a 24-31-s transfer of ten million 100-byte
 * records, competing with the tasks for the same cores. That code gains little from
 * C2, while the per-record path (the writer, Kafka's clients, Spark's SQL and row
 * code that a real-time query runs per record, Java's own classes) needs it. With the
 * directives the compilers took 8-9 CPU s and the transfer ran faster (481,488
 * records/s against 420,932 in back-to-back runs; benchmarks/RESULTS.md, "Spark's own
 * code without C2"). On a cluster's executors capped at a fifth of a core the
 * compilers' CPU did not change measurably; they get the same directives, so that
 * every JVM that runs tasks compiles alike.
 *
 * <p>How: {@code compiler-directives.json} (beside this class) excludes those other
 * packages from C2 only. HotSpot then compiles their hot methods with C1 at full
 * speed instead (tier 1, no profiling), which costs a fraction of C2's work; a C2
 * compilation of a per-record method still inlines whatever it calls. The
 * directives are added when the executor starts ({@link ExecutorPlugin#init}, in
 * local mode the driver's JVM), through the JVM's diagnostic command
 * {@code Compiler.directives_add}: a JVM option would need the file on every
 * executor host before the JVM starts, and executors are plain Spark JVMs. A JVM
 * that cannot take them (no such command) logs a warning and compiles as before.
 *
 * <p>The same file keeps from C2 the JDK's own code that links lambdas, method
 * handles and reflective calls and writes the classes behind them ({@code
 * java.lang.invoke}, the JDK's internal ASM and reflection): it runs as call sites
 * are first reached, in start-up, planning and task set-up, never once a record,
 * yet it took a quarter of C2's time while a million 100-byte records flowed.
 */
public final class CompilerDirectives implements SparkPlugin {
  static final String RESOURCE = "compiler-directives.json";
  /** Set once a JVM has the directives: a new Spark context in it adds none again. */
  static final String ADDED_PROPERTY = "mirrorline.compilerDirectivesAdded";
  private static final Logger LOG = LoggerFactory.getLogger(CompilerDirectives.class);

  @Override
  public DriverPlugin driverPlugin() {
    return null;
  }

  @Override
  public ExecutorPlugin executorPlugin() {
    return new ExecutorPlugin() {
      @Override
      public void init(PluginContext context, Map<String, String> extraConf) {
        addToThisJvm();
      }
    };
  }

  /** Add the directives to this JVM unless it has them; what the JVM answered, or why not. */
  static synchronized String addToThisJvm() {
    if (System.getProperty(ADDED_PROPERTY) != null) {
      return "already added";
    }
    try {
      Path file = Files.createTempFile("mirrorline-compiler-directives", ".json");
      try (InputStream in = CompilerDirectives.class.getResourceAsStream(RESOURCE)) {
        if (in == null) {
          throw new IOException(RESOURCE + " is missing from the writer's jar");
        }
        Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
        Object answer = ManagementFactory.getPlatformMBeanServer().invoke(
            new ObjectName("com.sun.management:type=DiagnosticCommand"), "compilerDirectivesAdd",
            new Object[] {new String[] {file.toString()}},
            new String[] {String[].class.getName()});
        String text = String.valueOf(answer).trim();
        System.setProperty(ADDED_PROPERTY, "true");
        LOG.info("compiler directives: {}", text);
        return text;
      } finally {
        Files.deleteIfExists(file);
      }
    } catch (IOException | JMException | RuntimeException e) {
      LOG.warn("compiler directives not added, the JVM compiles as it would by itself: {}",
          e.toString());
      return "not added: " + e;
    }
  }
}
