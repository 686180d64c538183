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

  @Test
  void aTaskPerRangeUnlessCapped() {
    assertEquals(8, BatchWriter.tasks(ranges(8), 0).size());
    assertEquals(8, BatchWriter.tasks(ranges(8), 20).size());
    assertEquals(0, BatchWriter.tasks(ranges(0), 0).size());
  }

  @Test
  void aCapSharesTheRangesOutEvenly() {
    List<List<SourceRange>> tasks = BatchWriter.tasks(ranges(5), 2);
    assertEquals(List.of(0, 2, 4), partitions(tasks.get(0)));
    assertEquals(List.of(1, 3), partitions(tasks.get(1)));
    assertEquals(List.of(0, 1, 2, 3, 4), partitions(BatchWriter.tasks(ranges(5), 1).get(0)));
  }
}
