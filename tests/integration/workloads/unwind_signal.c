/* A signal handler's stack: ITIMER_PROF delivers SIGPROF every 4 ms of CPU time to a
 * process spinning in main -> interrupted -> grind; the handler on_tick spins in grind
 * too, for about 2 ms (half the time). A sample taken in the handler must lead
 * grind -> on_tick -> (the kernel's signal frame, libc's __restore_rt) -> grind or
 * interrupted -> main: the unwinder has to step through the signal frame, whose saved
 * registers live in the ucontext on the stack. Built -O2 -fomit-frame-pointer.
 * Runs for argv[1] seconds. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static volatile unsigned long sink;
static volatile sig_atomic_t done;

__attribute__((noipa)) unsigned long grind(unsigned long n)
{
	unsigned long x = sink;

	for (unsigned long i = 0; i < n; i++)
		x = x * 6364136223846793005UL + i;
	return x;
}

__attribute__((noipa)) void on_tick(int sig)
{
	(void)sig;
	sink = grind(1600000) + 1;
}

static void on_alarm(int sig)
{
	(void)sig;
	done = 1;
}

__attribute__((noipa)) void interrupted(void)
{
	while (!done)
		sink = grind(50000) + 1;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 5;
	struct sigaction sa;
	struct itimerval tick = { { 0, 4000 }, { 0, 4000 } };

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_tick;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGPROF, &sa, NULL) || setitimer(ITIMER_PROF, &tick, NULL))
		return 1;
	struct itimerval stop_at = { { 0, 0 }, { (time_t)seconds, (suseconds_t)((seconds - (double)(time_t)seconds) * 1e6) } };

	signal(SIGALRM, on_alarm);
	if (setitimer(ITIMER_REAL, &stop_at, NULL))
		return 1;
	interrupted();
	return 0;
}
