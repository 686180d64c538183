package io.mirrorline.writer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

class CommittedRunsTest {
  @Test
  void runsAreReadFromTheProgressTheWriterCommits() {
    byte[] value = ProgressRecords.value(1500,
        List.of(new long[] {1000, 40, 300}, new long[] {1302, 341, 198}), 17);
    List<long[]> runs = CommittedRuns.runsOf(value);
    assertEquals(2, runs.size());
    assertArrayEquals(new long[] {1000, 40, 300}, runs.get(0));
    assertArrayEquals(new long[] {1302, 341, 198}, runs.get(1));
  }

  @Test
  void aRecordWithoutRunsOrNotOursGivesNone() {
    assertEquals(0, CommittedRuns.runsOf(ProgressRecords.value(7, List.of(), 17)).size());
    assertEquals(0, CommittedRuns.runsOf("not json".getBytes(StandardCharsets.UTF_8)).size());
    assertEquals(0, CommittedRuns.runsOf("{\"runs\":[[1]]}".getBytes(StandardCharsets.UTF_8)).size());
  }

  @Test
  void onlyTheSkippedRangeIsKept() {
    List<long[]> runs = List.of(new long[] {1000, 40, 300}, new long[] {1302, 341, 198});
    List<long[]> kept = CommittedRuns.clip(runs, 1100, 1400);
    assertEquals(2, kept.size());
    assertArrayEquals(new long[] {1100, 140, 200}, kept.get(0));
    assertArrayEquals(new long[] {1302, 341, 98}, kept.get(1));
    assertEquals(0, CommittedRuns.clip(runs, 1500, 1600).size());
  }
}
