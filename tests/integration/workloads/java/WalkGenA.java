// One generation of tests/integration/workloads/java/WalkChurn.java's class churn: loaded in a
// class loader of its own, run hot, then unloaded. Its methods' names are its own, so a frame
// of a freed and reused code address named after the other generation shows as a mix.
public class WalkGenA implements java.util.function.IntToLongFunction {
    public long applyAsLong(int n) {
        return workA(n);
    }

    static long workA(int n) {
        long s = 0;
        for (int i = 0; i < 100; i++)
            s += innerA(n + i);
        return s;
    }

    static long innerA(int x) {
        long v = x;
        for (int i = 0; i < 200; i++)
            v = (v << 3) - v + i;
        return v;
    }
}
