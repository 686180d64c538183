package io.mirrorline.writer;

import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * Mirrorline's progress records and committed positions, byte for byte as the
 * driver writes them (formats in {@code src/mirrorline/engine/progress.py}): JSON
 * with sorted keys and no spaces, non-ASCII escaped, so that compaction keeps one
 * record per key whichever side wrote it.
 */
final class ProgressRecords {
  static final int FORMAT_VERSION = 1;
  static final int POSITION_VERSION = 1;

  private ProgressRecords() {}

  static byte[] key(String flow, String topic, int partition) {
    return ("{\"flow\":" + string(flow) + ",\"partition\":" + partition + ",\"topic\":"
        + string(topic) + "}").getBytes(StandardCharsets.UTF_8);
  }

  static byte[] value(long nextOffset, List<long[]> runs, long nowMs) {
    StringBuilder out = new StringBuilder(64 + runs.size() * 32);
    out.append("{\"next_offset\":").append(nextOffset);
    if (!runs.isEmpty()) {
      out.append(",\"runs\":[");
      for (int i = 0; i < runs.size(); i++) {
        long[] run = runs.get(i);
        out.append(i == 0 ? "[" : ",[").append(run[0]).append(',').append(run[1]).append(',')
            .append(run[2]).append(']');
      }
      out.append(']');
    }
    out.append(",\"updated_ms\":").append(nowMs).append(",\"version\":").append(FORMAT_VERSION)
        .append('}');
    return out.toString().getBytes(StandardCharsets.UTF_8);
  }

  /** The metadata of a committed position: the source offset it stands for. */
  static String positionMetadata(long nextOffset) {
    return "{\"next_offset\": " + nextOffset + ", \"version\": " + POSITION_VERSION + "}";
  }

  /** The source offset a position's metadata holds, or -1 when it holds none we wrote. */
  static long nextOffsetOf(String metadata) {
    if (metadata == null) {
      return -1;
    }
    int at = metadata.indexOf("\"next_offset\":");
    if (at < 0) {
      return -1;
    }
    int i = at + "\"next_offset\":".length();
    while (i < metadata.length() && metadata.charAt(i) == ' ') {
      i++;
    }
    int start = i;
    while (i < metadata.length() && Character.isDigit(metadata.charAt(i))) {
      i++;
    }
    try {
      return Long.parseLong(metadata.substring(start, i));
    } catch (NumberFormatException e) {
      return -1;
    }
  }

  /** A JSON string as Python's json.dumps writes it (ASCII only). */
  static String string(String text) {
    StringBuilder out = new StringBuilder(text.length() + 2).append('"');
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      switch (c) {
        case '"': out.append("\\\""); break;
        case '\\': out.append("\\\\"); break;
        case '\n': out.append("\\n"); break;
        case '\r': out.append("\\r"); break;
        case '\t': out.append("\\t"); break;
        case '\b': out.append("\\b"); break;
        case '\f': out.append("\\f"); break;
        default:
          if (c < 0x20 || c > 0x7e) {
            out.append(String.format("\\u%04x", (int) c));
          } else {
            out.append(c);
          }
      }
    }
    return out.append('"').toString();
  }
}
