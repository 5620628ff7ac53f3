// Lists every Apache Hudi config key a Hudi jar declares: each static ConfigProperty field (and
// each ConfigProperty val of a Scala object) of every org.apache.hudi class, by reflection. Prints
// one JSON object per declaration (key, default, infer, alternatives, valid values, declared_in),
// then one per property of a HoodieWriteConfig built for the Spark engine (spark_write_config);
// scripts/hudi-config-keys runs it and writes python/hudi_md/config/hudi_keys.json.
//
//   java -cp <hudi bundle>:<spark jars>/* scripts/HudiConfigKeys.java <hudi bundle jar>
//
// A class that fails to load (a dependency the classpath lacks) is skipped; HUDI_KEYS_DEBUG=1 names
// it on stderr. A field that fails to initialise is named on stderr.

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Enumeration;
import java.util.List;
import java.util.Properties;
import java.util.TreeSet;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import org.apache.hudi.common.engine.EngineType;
import org.apache.hudi.config.HoodieWriteConfig;

public class HudiConfigKeys {
  static final String CONFIG_PROPERTY = "org.apache.hudi.common.config.ConfigProperty";
  // a config key's shape: hoodie.<word>(.<word>)*, not a prefix (trailing dot)
  static final java.util.regex.Pattern KEY = java.util.regex.Pattern.compile("hoodie(\\.[A-Za-z0-9_\\-]+)+");

  public static void main(String[] args) throws Exception {
    ClassLoader loader = HudiConfigKeys.class.getClassLoader();
    Class<?> configProperty = Class.forName(CONFIG_PROPERTY, false, loader);
    Method key = configProperty.getMethod("key");
    Method hasDefault = configProperty.getMethod("hasDefaultValue");
    Method defaultValue = configProperty.getMethod("defaultValue");
    Method alternatives = configProperty.getMethod("getAlternatives");
    Method hasInfer = configProperty.getMethod("hasInferFunction");
    Field validValues = configProperty.getDeclaredField("validValues");
    validValues.setAccessible(true);

    List<String> skipped = new ArrayList<>();
    try (JarFile jar = new JarFile(args[0])) {
      TreeSet<String> names = new TreeSet<>();
      for (Enumeration<JarEntry> e = jar.entries(); e.hasMoreElements(); ) {
        String name = e.nextElement().getName();
        // org/apache/hudi/org/...: libraries the bundle shades, not Hudi's own classes
        if (name.startsWith("org/apache/hudi/") && !name.startsWith("org/apache/hudi/org/")
            && !name.startsWith("org/apache/hudi/com/") && name.endsWith(".class")) {
          names.add(name.substring(0, name.length() - 6).replace('/', '.'));
        }
      }
      for (String className : names) {
        Class<?> cls;
        List<Field> fields = new ArrayList<>();
        List<Field> constants = new ArrayList<>();
        // a Scala object (DataSourceWriteOptions$) holds its vals as instance fields of MODULE$
        boolean scalaObject = false;
        try {
          cls = Class.forName(className, false, loader);
          for (Field f : cls.getDeclaredFields()) {
            if (f.getName().equals("MODULE$") && Modifier.isStatic(f.getModifiers())) {
              scalaObject = true;
            }
          }
          for (Field f : cls.getDeclaredFields()) {
            if (configProperty.isAssignableFrom(f.getType())
                && (Modifier.isStatic(f.getModifiers()) || scalaObject)) {
              fields.add(f);
            } else if (f.getType() == String.class && Modifier.isStatic(f.getModifiers())
                && Modifier.isFinal(f.getModifiers())) {
              constants.add(f);
            }
          }
        } catch (Throwable t) {
          if (System.getenv("HUDI_KEYS_DEBUG") != null) System.err.println("load " + className + ": " + t);
          continue;  // a class whose signatures name a missing dependency declares no key we need
        }
        // Keys Hudi reads by a plain String constant, not a ConfigProperty (LockConfiguration's,
        // DefaultHoodieRecordPayload's hoodie.payload.delete.field, ...): no default known.
        for (Field f : constants) {
          try {
            f.setAccessible(true);
            Object value = f.get(null);
            if (value instanceof String && KEY.matcher((String) value).matches()) {
              System.out.println("{\"constant\": true, \"key\": " + quote((String) value)
                  + ", \"declared_in\": " + quote(cls.getName().replaceAll("\\$$", "") + "." + f.getName()) + "}");
            }
          } catch (Throwable t) {
            skipped.add("skipped " + className + "." + f.getName() + ": " + t);
          }
        }
        if (fields.isEmpty()) {
          continue;
        }
        for (Field f : fields) {
          Object prop;
          try {
            f.setAccessible(true);
            Object owner = null;
            if (!Modifier.isStatic(f.getModifiers())) {
              Field module = cls.getDeclaredField("MODULE$");
              module.setAccessible(true);
              owner = module.get(null);
            }
            prop = f.get(owner);
          } catch (Throwable t) {
            skipped.add("skipped " + className + "." + f.getName() + ": " + t);
            continue;
          }
          if (prop == null) {
            continue;
          }
          StringBuilder json = new StringBuilder("{\"key\": ").append(quote((String) key.invoke(prop)));
          json.append(", \"default\": ");
          if ((Boolean) hasDefault.invoke(prop)) {
            Object value = defaultValue.invoke(prop);
            json.append(value == null ? "null" : quote(String.valueOf(value)));
          } else {
            json.append("null");
          }
          json.append(", \"infer\": ").append((Boolean) hasInfer.invoke(prop));
          json.append(", \"alternatives\": ").append(list((Collection<?>) alternatives.invoke(prop)));
          Object valid = validValues.get(prop);
          json.append(", \"valid\": ").append(valid == null ? "[]" : list(new TreeSet<>((Collection<?>) valid)));
          json.append(", \"declared_in\": ").append(quote(cls.getName().replaceAll("\\$$", "") + "." + f.getName()));
          System.out.println(json.append("}"));
        }
      }
    }
    // Defaults a Spark writer gets that differ from the declared ones: the config builders set
    // some by engine (HoodieMetadataConfig.Builder.getDefaultColStatsEnable: true on Spark).
    Object writeConfig = HoodieWriteConfig.newBuilder()
        .withPath("/hudi-config-keys/table").withEngineType(EngineType.SPARK).build();
    Properties props = ((HoodieWriteConfig) writeConfig).getProps();
    for (String k : new TreeSet<>(props.stringPropertyNames())) {
      System.out.println("{\"spark_write_config\": true, \"key\": " + quote(k)
          + ", \"value\": " + quote(props.getProperty(k)) + "}");
    }
    for (String s : skipped) {
      System.err.println(s);
    }
  }

  static String list(Collection<?> values) {
    StringBuilder b = new StringBuilder("[");
    int i = 0;
    for (Object v : values) {
      if (i++ > 0) {
        b.append(", ");
      }
      b.append(quote(String.valueOf(v)));
    }
    return b.append("]").toString();
  }

  static String quote(String s) {
    StringBuilder b = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      switch (c) {
        case '"': b.append("\\\""); break;
        case '\\': b.append("\\\\"); break;
        case '\n': b.append("\\n"); break;
        case '\r': b.append("\\r"); break;
        case '\t': b.append("\\t"); break;
        default:
          if (c < 0x20) {
            b.append(String.format("\\u%04x", (int) c));
          } else {
            b.append(c);
          }
      }
    }
    return b.append("\"").toString();
  }
}
