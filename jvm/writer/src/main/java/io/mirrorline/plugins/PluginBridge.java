package io.mirrorline.plugins;

import java.io.BufferedReader;
import java.io.FileOutputStream;
import java.io.FileDescriptor;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintStream;
import java.io.Writer;
import java.lang.reflect.InvocationTargetException;
import java.net.MalformedURLException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.Configurable;
import org.apache.kafka.connect.mirror.ConfigPropertyFilter;
import org.apache.kafka.connect.mirror.GroupFilter;
import org.apache.kafka.connect.mirror.ReplicationPolicy;
import org.apache.kafka.connect.mirror.TopicFilter;

/**
 * Answers Mirrorline's questions to the Java classes an MM2 file names (its replication
 * policy and filters), one request line on stdin, one answer line on stdout.
 *
 * <p>The protocol is Python's {@code mirrorline.java_bridge} (its docstring is the
 * reference): tab-separated fields, each escaped ({@code \\}, {@code \t}, {@code \n},
 * {@code \r}), {@code \N} for null. {@code load ID KIND CLASS NJARS JAR... KEY VALUE...}
 * creates an object from the jars (one class loader per set of jars, over the MM2
 * interfaces on this JVM's classpath) and configures it with the settings; {@code call ID
 * METHOD ARG...} calls one interface method. Answers are {@code ok [VALUE]} or
 * {@code error KIND MESSAGE} (MESSAGE says what is wrong with the class, without its
 * name), KIND being {@code not-found}, {@code interface},
 * {@code create}, {@code configure}, {@code threw} or {@code protocol}.
 *
 * <p>Everything the classes print goes to stderr: stdout carries answers only.
 */
public final class PluginBridge {
  private static final String NULL = "\\N";

  private final Map<String, Object> objects = new HashMap<>();
  private final Map<List<String>, ClassLoader> loaders = new HashMap<>();

  public static void main(String[] args) throws IOException {
    Writer out =
        new OutputStreamWriter(new FileOutputStream(FileDescriptor.out), StandardCharsets.UTF_8);
    System.setOut(new PrintStream(new FileOutputStream(FileDescriptor.err), true, "UTF-8"));
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    PluginBridge bridge = new PluginBridge();
    out.write("ready\n");
    out.flush();
    for (String line = in.readLine(); line != null; line = in.readLine()) {
      out.write(bridge.answer(line));
      out.write('\n');
      out.flush();
    }
  }

  String answer(String line) {
    List<String> fields = decode(line);
    try {
      String command = fields.get(0);
      if (command.equals("load")) {
        return load(fields);
      }
      if (command.equals("call")) {
        return call(fields);
      }
      return error("protocol", "unknown command " + command);
    } catch (IndexOutOfBoundsException e) {
      return error("protocol", "too few fields in " + line);
    }
  }

  private String load(List<String> f) {
    String id = f.get(1);
    String kind = f.get(2);
    String className = f.get(3);
    int jarCount = Integer.parseInt(f.get(4));
    List<String> jars = f.subList(5, 5 + jarCount);
    Map<String, String> settings = new HashMap<>();
    for (int i = 5 + jarCount; i + 1 < f.size(); i += 2) {
      settings.put(f.get(i), f.get(i + 1));
    }
    Class<?> wanted = interfaceOf(kind);
    if (wanted == null) {
      return error("protocol", "unknown kind " + kind);
    }
    Class<?> found;
    try {
      found = Class.forName(className, true, loader(jars));
    } catch (ClassNotFoundException e) {
      return error("not-found", "is in none of the jars " + String.join(", ", jars));
    } catch (LinkageError e) {
      return error("not-found", "cannot be loaded: " + describe(e));
    }
    if (!wanted.isAssignableFrom(found)) {
      return error("interface", "does not implement " + wanted.getName());
    }
    Object created;
    try {
      created = found.getConstructor().newInstance();
    } catch (InvocationTargetException e) {
      return error("create", "could not be created: its constructor threw " + describe(e.getCause()));
    } catch (ReflectiveOperationException | LinkageError e) {
      return error("create", "has no public constructor without arguments: " + describe(e));
    }
    if (created instanceof Configurable) {
      try {
        ((Configurable) created).configure(settings);
      } catch (RuntimeException | LinkageError e) {
        return error("configure", "threw in configure(): " + describe(e));
      }
    }
    objects.put(id, created);
    return "ok";
  }

  private String call(List<String> f) {
    Object target = objects.get(f.get(1));
    if (target == null) {
      return error("protocol", "no object " + f.get(1));
    }
    String method = f.get(2);
    List<String> a = f.subList(3, f.size());
    try {
      Object result = invoke(target, method, a);
      if (result == Unknown.METHOD) {
        return error("protocol", "no method " + method + " on " + target.getClass().getName());
      }
      return "ok\t" + (result == null ? NULL : escape(String.valueOf(result)));
    } catch (RuntimeException | LinkageError e) {
      return error("threw", method + " threw " + describe(e));
    }
  }

  private enum Unknown { METHOD }

  private static Object invoke(Object target, String method, List<String> a) {
    if (target instanceof ReplicationPolicy) {
      ReplicationPolicy p = (ReplicationPolicy) target;
      switch (method) {
        case "formatRemoteTopic": return p.formatRemoteTopic(a.get(0), a.get(1));
        case "topicSource": return p.topicSource(a.get(0));
        case "upstreamTopic": return p.upstreamTopic(a.get(0));
        case "originalTopic": return p.originalTopic(a.get(0));
        case "heartbeatsTopic": return p.heartbeatsTopic();
        case "offsetSyncsTopic": return p.offsetSyncsTopic(a.get(0));
        case "checkpointsTopic": return p.checkpointsTopic(a.get(0));
        case "isHeartbeatsTopic": return p.isHeartbeatsTopic(a.get(0));
        case "isCheckpointsTopic": return p.isCheckpointsTopic(a.get(0));
        case "isMM2InternalTopic": return p.isMM2InternalTopic(a.get(0));
        case "isInternalTopic": return p.isInternalTopic(a.get(0));
        default: return Unknown.METHOD;
      }
    }
    if (target instanceof TopicFilter && method.equals("shouldReplicateTopic")) {
      return ((TopicFilter) target).shouldReplicateTopic(a.get(0));
    }
    if (target instanceof GroupFilter && method.equals("shouldReplicateGroup")) {
      return ((GroupFilter) target).shouldReplicateGroup(a.get(0));
    }
    if (target instanceof ConfigPropertyFilter) {
      ConfigPropertyFilter c = (ConfigPropertyFilter) target;
      if (method.equals("shouldReplicateConfigProperty")) {
        return c.shouldReplicateConfigProperty(a.get(0));
      }
      if (method.equals("shouldReplicateSourceDefault")) {
        return c.shouldReplicateSourceDefault(a.get(0));
      }
    }
    return Unknown.METHOD;
  }

  private static Class<?> interfaceOf(String kind) {
    switch (kind) {
      case "replication-policy": return ReplicationPolicy.class;
      case "topic-filter": return TopicFilter.class;
      case "group-filter": return GroupFilter.class;
      case "config-property-filter": return ConfigPropertyFilter.class;
      default: return null;
    }
  }

  private ClassLoader loader(List<String> jars) {
    List<String> key = List.copyOf(jars);
    return loaders.computeIfAbsent(key, k -> {
      URL[] urls = new URL[k.size()];
      for (int i = 0; i < urls.length; i++) {
        try {
          urls[i] = Path.of(k.get(i)).toUri().toURL();
        } catch (MalformedURLException e) {
          throw new IllegalArgumentException(e);
        }
      }
      return new URLClassLoader("mirrorline-plugins", urls, PluginBridge.class.getClassLoader());
    });
  }

  private static String describe(Throwable e) {
    String message = e.getMessage();
    return e.getClass().getName() + (message == null ? "" : ": " + message);
  }

  private static String error(String kind, String message) {
    return "error\t" + kind + "\t" + escape(message);
  }

  static String escape(String s) {
    StringBuilder b = new StringBuilder(s.length());
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '\\': b.append("\\\\"); break;
        case '\t': b.append("\\t"); break;
        case '\n': b.append("\\n"); break;
        case '\r': b.append("\\r"); break;
        default: b.append(c);
      }
    }
    return b.toString();
  }

  static List<String> decode(String line) {
    List<String> fields = new ArrayList<>();
    for (String raw : line.split("\t", -1)) {
      fields.add(raw.equals(NULL) ? null : unescape(raw));
    }
    return fields;
  }

  private static String unescape(String s) {
    if (s.indexOf('\\') < 0) {
      return s;
    }
    StringBuilder b = new StringBuilder(s.length());
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c != '\\' || i + 1 == s.length()) {
        b.append(c);
        continue;
      }
      char next = s.charAt(++i);
      b.append(next == 't' ? '\t' : next == 'n' ? '\n' : next == 'r' ? '\r' : next);
    }
    return b.toString();
  }
}
