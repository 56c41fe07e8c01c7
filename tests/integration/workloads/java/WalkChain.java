// The busy chain of tests/integration/test_java_stacks.py: main -> Worker.crunch -> recurse x5
// -> leaf -> spin, run forever in the thread "walk-busy" (the main thread waits), plus, with
// the argument "two", a second thread "walk-other" running other -> otherLeaf -> otherSpin.
// Methods are kept from being inlined into each other only where the test needs them apart:
// the chain is checked through compiled code as HotSpot compiles it.
public class WalkChain {
    static volatile long sink;

    static final class Worker {
        long crunch(int n) {
            return recurse(n, 5);
        }

        long recurse(int n, int depth) {
            if (depth > 1)
                return recurse(n + 1, depth - 1) + 1;
            return leaf(n);
        }

        long leaf(int n) {
            long s = 0;
            for (int i = 0; i < 200; i++)
                s += spin(n + i);
            return s;
        }

        static long spin(int x) {
            long v = x;
            for (int i = 0; i < 2000; i++)
                v = v * 6364136223846793005L + 1442695040888963407L ^ (v >>> 13);
            return v;
        }
    }

    static long other(int n) {
        return otherLeaf(n) + 1;
    }

    static long otherLeaf(int n) {
        long s = 0;
        for (int i = 0; i < 300; i++)
            s += otherSpin(n ^ i);
        return s;
    }

    static long otherSpin(int x) {
        long v = x;
        for (int i = 0; i < 1500; i++)
            v = (v ^ (v << 7)) * 31 + i;
        return v;
    }

    public static void main(String[] args) throws Exception {
        Worker w = new Worker();
        Thread busy = new Thread(() -> {
            for (int n = 0;; n++)
                sink += w.crunch(n);
        }, "walk-busy");
        busy.setDaemon(true);
        busy.start();
        if (args.length > 0 && args[0].equals("two")) {
            Thread o = new Thread(() -> {
                for (int n = 0;; n++)
                    sink += other(n);
            }, "walk-other");
            o.setDaemon(true);
            o.start();
        }
        System.out.println("ready");
        System.out.flush();
        Thread.sleep(Long.MAX_VALUE);
    }
}
