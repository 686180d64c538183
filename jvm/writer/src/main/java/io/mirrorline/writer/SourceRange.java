package io.mirrorline.writer;

import java.io.Serializable;

/** The source offsets {@code [from, until)} of one partition that a batch replicates. */
final class SourceRange implements Serializable {
  private static final long serialVersionUID = 1L;
  final String topic;
  final int partition;
  final long from;
  final long until;
  /** The executor Spark's Kafka source places the partition on (null: any). */
  final String executor;

  SourceRange(String topic, int partition, long from, long until, String executor) {
    this.topic = topic;
    this.partition = partition;
    this.from = from;
    this.until = until;
    this.executor = executor;
  }

  @Override
  public String toString() {
    return topic + "[" + partition + "] offsets " + from + ".." + until;
  }
}
