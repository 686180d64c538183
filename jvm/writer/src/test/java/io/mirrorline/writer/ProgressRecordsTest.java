package io.mirrorline.writer;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Progress records written by exactly-once tasks must be byte-identical to the
 * driver's (tests/unit/test_progress_format.py pins the same literals on the Python
 * side): compaction keeps one record per key only if equal keys are equal bytes.
 */
class ProgressRecordsTest {
  private static String text(byte[] bytes) {
    return new String(bytes, StandardCharsets.UTF_8);
  }

  @Test
  void keyIsSortedCompactJson() {
    assertEquals("{\"flow\":\"east->west\",\"partition\":3,\"topic\":\"orders\"}",
        text(ProgressRecords.key("east->west", "orders", 3)));
  }

  @Test
  void nonAsciiAndControlCharactersAreEscapedLikePython() {
    assertEquals("\"caf\\u00e9 \\\"q\\\" \\\\ \\n\\u0001\\u007f\"", ProgressRecords.string("café \"q\" \\ \n\u0001\u007f"));
  }

  @Test
  void valueCarriesTheRunsOnlyWhenThereAreSome() {
    assertEquals("{\"next_offset\":1500,\"runs\":[[1000,40,300],[1302,340,198]],\"updated_ms\":17,\"version\":1}",
        text(ProgressRecords.value(1500, List.of(new long[] {1000, 40, 300}, new long[] {1302, 340, 198}), 17)));
    assertEquals("{\"next_offset\":7,\"updated_ms\":17,\"version\":1}",
        text(ProgressRecords.value(7, List.of(), 17)));
  }

  @Test
  void positionMetadataRoundTrips() {
    assertEquals(1234, ProgressRecords.nextOffsetOf(ProgressRecords.positionMetadata(1234)));
    assertEquals(99, ProgressRecords.nextOffsetOf("{\"next_offset\":99,\"version\":1}"));
    assertEquals(-1, ProgressRecords.nextOffsetOf("written by someone else"));
    assertEquals(-1, ProgressRecords.nextOffsetOf(null));
  }
}
