// Code that changes under the profiler, for tests/integration/test_java_stacks.py: two threads.
// "walk-deopt" runs deoptLoop -> measure -> Shape.area on Squares only, so C2 compiles measure
// with Square.area inlined (the only Shape loaded); after two seconds it starts making Circles,
// which deoptimises measure mid-run and gets it compiled again. "walk-unload" loads WalkGenA
// and WalkGenB by turns, each in a class loader of its own from the directory given as the
// first argument, runs it hot (compiled), drops it and asks for a GC: the class is unloaded,
// its code freed, and the next generation's code may land at the same addresses. Prints
// "ready" once both run; runs until killed.
import java.io.File;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.function.IntToLongFunction;

public class WalkChurn {
    static volatile long sink;

    interface Shape {
        long area(int n);
    }

    static final class Square implements Shape {
        public long area(int n) {
            long v = n;
            for (int i = 0; i < 500; i++)
                v = v * 31 + i;
            return v;
        }
    }

    static final class Circle implements Shape {
        public long area(int n) {
            long v = n;
            for (int i = 0; i < 500; i++)
                v = v * 17 ^ i;
            return v;
        }
    }

    static long measure(Shape s, int n) {
        return s.area(n) + 1;
    }

    static void deoptLoop() {
        Shape square = new Square();
        long start = System.nanoTime();
        Shape other = null;
        for (int n = 0;; n++) {
            if (other == null && System.nanoTime() - start > 2_000_000_000L)
                other = new Circle(); // loads Circle: measure's inlining of Square.area is invalid now
            sink += measure(other != null && (n & 1) == 0 ? other : square, n);
        }
    }

    static void unloadLoop(File dir) throws Exception {
        URL[] path = { dir.toURI().toURL() };
        for (int gen = 0;; gen++) {
            String name = (gen & 1) == 0 ? "WalkGenA" : "WalkGenB";
            try (URLClassLoader loader = new URLClassLoader(path, null)) {
                IntToLongFunction job = (IntToLongFunction) loader.loadClass(name).getDeclaredConstructor().newInstance();
                long end = System.nanoTime() + 300_000_000L;
                for (int n = 0; System.nanoTime() < end; n++)
                    sink += job.applyAsLong(n);
            }
            System.gc(); // the loader is gone: its class and code go
        }
    }

    public static void main(String[] args) throws Exception {
        File dir = new File(args[0]);
        Thread deopt = new Thread(WalkChurn::deoptLoop, "walk-deopt");
        Thread unload = new Thread(() -> {
            try {
                unloadLoop(dir);
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        }, "walk-unload");
        deopt.setDaemon(true);
        unload.setDaemon(true);
        deopt.start();
        unload.start();
        System.out.println("ready");
        System.out.flush();
        Thread.sleep(Long.MAX_VALUE);
    }
}
