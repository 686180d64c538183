package io.mirrorline.writer;

/**
 * A batch cannot be written; the message names flow, topic, partition and offset.
 *
 * <p>The Python driver shows the text after {@code DeliveryFailed: } as the
 * flow's reason, so messages are written for operators and never hold settings.
 */
public final class DeliveryFailed extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public DeliveryFailed(String message) {
    super(message);
  }
}
