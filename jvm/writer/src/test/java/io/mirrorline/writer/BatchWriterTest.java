package io.mirrorline.writer;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class BatchWriterTest {
  private static List<SourceRange> ranges(int n) {
    List<SourceRange> out = new ArrayList<>();
    for (int p = 0; p < n; p++) {
      out.add(new SourceRange("orders", p, 0, 10, null));
    }
    return out;
  }

  private static List<Integer> partitions(List<SourceRange> task) {
    List<Integer> out = new ArrayList<>();
    task.forEach(r -> out.add(r.partition));
    return out;
  }

  private static List<SourceRange> on(String executor, int from, int n) {
    List<SourceRange> out = new ArrayList<>();
    for (int p = from; p < from + n; p++) {
      out.add(new SourceRange("orders", p, 0, 10, executor));
    }
    return out;
  }

  @Test
  void aTaskPerRangeWithoutBounds() {
    assertEquals(8, BatchWriter.tasks(ranges(8), 0, 0).size());
    assertEquals(8, BatchWriter.tasks(ranges(8), 20, 0).size());
    assertEquals(0, BatchWriter.tasks(ranges(0), 0, 2).size());
  }

  @Test
  void noMoreTasksThanAnExecutorRunsAtOnce() {
    List<List<SourceRange>> tasks = BatchWriter.tasks(ranges(8), 0, 2);
    assertEquals(2, tasks.size());
    assertEquals(List.of(0, 2, 4, 6), partitions(tasks.get(0)));
    assertEquals(List.of(1, 3, 5, 7), partitions(tasks.get(1)));
    assertEquals(3, BatchWriter.tasks(ranges(3), 0, 4).size());
  }

  @Test
  void eachExecutorGetsTasksForItsOwnRanges() {
    List<SourceRange> ranges = new ArrayList<>(on("a", 0, 4));
    ranges.addAll(on("b", 4, 4));
    List<List<SourceRange>> tasks = BatchWriter.tasks(ranges, 0, 2);
    assertEquals(4, tasks.size());
    for (List<SourceRange> task : tasks) {
      assertEquals(1, task.stream().map(r -> r.executor).distinct().count());
    }
    // tasks.max bounds the whole batch: one task per executor here.
    assertEquals(2, BatchWriter.tasks(ranges, 3, 2).size());
  }

  @Test
  void aCapSharesTheRangesOutEvenly() {
    List<List<SourceRange>> tasks = BatchWriter.tasks(ranges(5), 2, 0);
    assertEquals(List.of(0, 2, 4), partitions(tasks.get(0)));
    assertEquals(List.of(1, 3), partitions(tasks.get(1)));
    assertEquals(List.of(0, 1, 2, 3, 4), partitions(BatchWriter.tasks(ranges(5), 1, 4).get(0)));
    // More executors than tasks.max: the ranges are dealt out over tasks.max tasks.
    List<SourceRange> spread = new ArrayList<>(on("a", 0, 1));
    spread.addAll(on("b", 1, 1));
    spread.addAll(on("c", 2, 1));
    assertEquals(2, BatchWriter.tasks(spread, 2, 2).size());
  }
}
