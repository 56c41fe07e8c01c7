// Deep recursion in C++ built -O2 -fomit-frame-pointer: main -> Walker::run ->
// Descender::descend x DEPTH -> burn. descend is a virtual call through an object
// that the compiler cannot see through, and it uses the callee's result after the
// call, so gcc keeps every level as a real frame (no inlining, no tail call, no loop).
// Nearly all the time is spent in burn at the bottom, so a sampled stack is
// DEPTH + a few frames deep: more than the 64 frames one BPF program walks, which
// exercises the walk across tail calls. Usage: unwind_recurse DEPTH SECONDS.
#include <chrono>
#include <cstdlib>
#include <memory>

namespace {
volatile unsigned long sink;
}

struct Descender {
	virtual ~Descender() = default;
	virtual unsigned long descend(int left);
};

__attribute__((noipa)) unsigned long burn()
{
	unsigned long x = sink;
	for (unsigned long i = 0; i < 200000; i++)
		x = x * 2862933555777941757UL + i;
	return x;
}

__attribute__((noipa)) unsigned long Descender::descend(int left)
{
	if (left <= 1)
		return burn() ^ static_cast<unsigned long>(left);
	return descend(left - 1) * 3 + static_cast<unsigned long>(left);
}

struct Walker {
	std::unique_ptr<Descender> d;
	__attribute__((noipa)) unsigned long run(int depth) { return d->descend(depth) + 1; }
};

int main(int argc, char **argv)
{
	int depth = argc > 1 ? std::atoi(argv[1]) : 100;
	double seconds = argc > 2 ? std::atof(argv[2]) : 5;
	Walker w{std::make_unique<Descender>()};
	auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);

	while (std::chrono::steady_clock::now() < end)
		sink = w.run(depth);
	return 0;
}
