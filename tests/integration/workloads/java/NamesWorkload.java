// A busy Java program for tests/integration/test_hotspot_names.py: a class method, recursion,
// a lambda and an inner class, each run hot enough for C1 and C2 to compile them (and C2 to
// inline the small ones). Prints "ready" once the loops run; runs until killed.
import java.util.function.IntUnaryOperator;

public class NamesWorkload {
	static volatile long sink;

	static final class Worker {
		long crunch(int n) {
			return recurse(n, 5);
		}

		long recurse(int n, int depth) {
			if (depth == 0)
				return leaf(n);
			return recurse(n + 1, depth - 1) + 1;
		}

		long leaf(int n) {
			long acc = 0;
			for (int i = 0; i < 200; i++)
				acc += spin(n + i);
			return acc;
		}

		static long spin(int x) {
			return (x * 31L) ^ (x >>> 3);
		}
	}

	class Inner {
		long step(int x) {
			return x * 7L + (x & 5);
		}
	}

	long viaInner(int n) {
		Inner in = new Inner();
		long acc = 0;
		for (int i = 0; i < 100; i++)
			acc += in.step(n + i);
		return acc;
	}

	public static void main(String[] args) throws Exception {
		NamesWorkload outer = new NamesWorkload();
		Worker w = new Worker();
		IntUnaryOperator lam = x -> (x * 13) ^ (x >> 2);
		boolean printed = false;
		long start = System.nanoTime();
		for (int round = 0;; round++) {
			long acc = 0;
			for (int i = 0; i < 1000; i++) {
				acc += w.crunch(i);
				acc += lam.applyAsInt(i);
				acc += outer.viaInner(i);
			}
			sink = acc;
			if (!printed && System.nanoTime() - start > 2_000_000_000L) {
				System.out.println("ready");
				System.out.flush();
				printed = true;
			}
		}
	}
}
