// Starts Debian's Apache JMeter 2.13 (package jmeter) in non-GUI mode, exactly as
// /usr/bin/jmeter does (org.apache.jmeter.NewDriver), after one fix: Debian 12 pairs JMeter
// 2.13 with XStream 1.4.20, whose security framework denies every type not allowed
// explicitly, and JMeter 2.13 predates it, so loading ANY .jmx fails with
// "ForbiddenClassException: org.apache.jmeter.save.ScriptWrapper" (and exits 0). This launcher
// allows JMeter's own packages in SaveService's XStream before JMeter reads the plan.
//
// Everything goes through reflection: no JMeter or XStream class is needed to compile it.
// Run: java -Djmeter.home=/usr/share/jmeter -jar vb-jmeter.jar <jmeter arguments>
// (the jar's manifest puts /usr/share/jmeter/bin/ApacheJMeter.jar on the class path).

import java.lang.reflect.Field;
import java.lang.reflect.Method;

public final class VbJMeter {
    private static final String[] ALLOWED = {"org.apache.jmeter.**", "org.apache.jorphan.**"};

    private VbJMeter() {}

    public static void main(String[] args) throws Exception {
        // NewDriver takes JMeter's home from a one-entry class path's jar (here: ours), but
        // from jmeter.home when the class path has several entries: give it both
        String home = System.getProperty("jmeter.home", "/usr/share/jmeter");
        System.setProperty("jmeter.home", home);
        System.setProperty("java.class.path", System.getProperty("java.class.path")
                + java.io.File.pathSeparator + home + "/bin/ApacheJMeter.jar");
        // NewDriver's static initializer builds the class loader of JMeter's lib/ext jars
        Class<?> driver = Class.forName("org.apache.jmeter.NewDriver");
        Field loaderField = driver.getDeclaredField("loader");
        loaderField.setAccessible(true);
        ClassLoader loader = (ClassLoader) loaderField.get(null);
        // SaveService reads JMeter's properties when it loads: point JMeterUtils at them first
        Class<?> utils = Class.forName("org.apache.jmeter.util.JMeterUtils", true, loader);
        utils.getMethod("setJMeterHome", String.class).invoke(null, home);
        utils.getMethod("loadJMeterProperties", String.class)
                .invoke(null, home + "/bin/jmeter.properties");
        Class<?> save = Class.forName("org.apache.jmeter.save.SaveService", true, loader);
        for (String name : new String[] {"JMXSAVER", "JTLSAVER"}) {
            Field f = save.getDeclaredField(name);
            f.setAccessible(true);
            Object xstream = f.get(null);
            Method allow = xstream.getClass().getMethod("allowTypesByWildcard", String[].class);
            allow.invoke(xstream, (Object) ALLOWED);
        }
        System.out.println("VB-JMETER xstream types allowed: " + String.join(" ", ALLOWED));
        driver.getMethod("main", String[].class).invoke(null, (Object) args);
    }
}
