/* process_* metrics (the names and help texts of Prometheus' process collector)
 * read from /proc/self at scrape time. */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "agent/http/internal.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

struct proc_stat {
	double cpu_seconds, start_time, vsize, rss;
};

static double boot_time(void)
{
	FILE *f = fopen("/proc/stat", "re");
	char line[256];
	double btime = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "btime %lf", &btime) == 1)
			break;
	fclose(f);
	return btime;
}

static int read_stat(struct proc_stat *st, struct np_err *err)
{
	char buf[2048];
	FILE *f = fopen("/proc/self/stat", "re");
	size_t n;
	unsigned long long utime, stime, starttime, vsize;
	long long rss;
	long tck = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);

	if (!f)
		return np_errno(err, "open /proc/self/stat");
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* The command name may hold spaces and parentheses: fields resume after the last ')'. */
	char *p = strrchr(buf, ')');
	if (!p || tck <= 0 || page <= 0 ||
	    sscanf(p + 2,
		   "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d %*d %llu %llu %lld",
		   &utime, &stime, &starttime, &vsize, &rss) != 5)
		return np_errf(err, "cannot parse /proc/self/stat");
	st->cpu_seconds = (double)(utime + stime) / (double)tck;
	st->start_time = boot_time() + (double)starttime / (double)tck;
	st->vsize = (double)vsize;
	st->rss = (double)rss * (double)page;
	return 0;
}

static double open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	double n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1; /* the directory stream's own descriptor */
}

static struct np_series *gauge(struct np_metrics *reg, const char *name, const char *help, struct np_err *err)
{
	struct np_metric *m = np_metrics_gauge(reg, name, help, NULL, err);
	return m ? np_metric_series(m, NULL, err) : NULL;
}

int np_httpd_process_metrics_update(struct np_metrics *reg, struct np_err *err)
{
	struct np_series *cpu, *start, *vmem, *rss, *fds, *max_fds;
	struct np_metric *cpu_m;
	struct proc_stat st;
	struct rlimit rl;
	int rc = -1;

	pthread_mutex_lock(&lock);
	/* Registering an existing family returns it, so this is cheap after the first scrape. */
	if (!(cpu_m = np_metrics_counter(reg, "process_cpu_seconds_total",
					 "Total user and system CPU time spent in seconds.", NULL, err)) ||
	    !(cpu = np_metric_series(cpu_m, NULL, err)) ||
	    !(start = gauge(reg, "process_start_time_seconds",
			    "Start time of the process since unix epoch in seconds.", err)) ||
	    !(vmem = gauge(reg, "process_virtual_memory_bytes", "Virtual memory size in bytes.", err)) ||
	    !(rss = gauge(reg, "process_resident_memory_bytes", "Resident memory size in bytes.", err)) ||
	    !(fds = gauge(reg, "process_open_fds", "Number of open file descriptors.", err)) ||
	    !(max_fds = gauge(reg, "process_max_fds", "Maximum number of open file descriptors.", err)))
		goto out;
	if (read_stat(&st, err))
		goto out;
	/* A counter only goes up: add what was used since the last scrape. */
	double prev = np_series_value(cpu);
	if (st.cpu_seconds > prev)
		np_series_add(cpu, st.cpu_seconds - prev);
	np_series_set(start, st.start_time);
	np_series_set(vmem, st.vsize);
	np_series_set(rss, st.rss);
	np_series_set(fds, open_fds());
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
		np_series_set(max_fds, (double)rl.rlim_cur);
	rc = 0;
out:
	pthread_mutex_unlock(&lock);
	return rc;
}
