package io.mirrorline.writer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class CompilerDirectivesTest {
  @Test
  void theJvmTakesTheDirectivesOnce() {
    String first = CompilerDirectives.addToThisJvm();
    assertTrue(first.contains("compiler directives added"), first);
    assertEquals("true", System.getProperty(CompilerDirectives.ADDED_PROPERTY));
    assertEquals("already added", CompilerDirectives.addToThisJvm());
  }
}
