/* Debug information upload: see debuginfo.h and docs/specs/debuginfo.md. */
#include "agent/write/debuginfo.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/pprof/proto.h"
#include "agent/write/elf_strip.h"
#include "agent/write/internal.h"
#include "lib/checksum.h"
#include "lib/clock.h"
#include "lib/intern.h"
#include "lib/log.h"
#include "lib/metrics.h"

/* ---- messages (debuginfo.v1alpha1, grafana/pyroscope api/debuginfo/v1alpha1/debuginfo.proto) ---- */

void np_debuginfo_encode_should_initiate(struct np_buf *out, const char *build_id, const char *otel_file_id,
					 const char *name, enum np_debuginfo_type type)
{
	size_t m = pb_begin(out, 1); /* ShouldInitiateUploadRequest.file */
	pb_string(out, 1, build_id); /* FileMetadata.gnu_build_id */
	if (otel_file_id && *otel_file_id)
		pb_string(out, 3, otel_file_id);
	pb_string(out, 4, name); /* .name */
	pb_uint64(out, 5, (uint64_t)type);
	pb_end(out, m);
}

void np_debuginfo_encode_upload_finished(struct np_buf *out, const char *build_id)
{
	pb_string(out, 1, build_id);
}

int np_debuginfo_decode_should_initiate(const void *data, size_t len, int *should, char *reason, size_t reason_cap,
					struct np_err *err)
{
	struct pb_reader r = { data, (const uint8_t *)data + len };
	struct pb_field f;
	int rc;

	*should = 0;
	if (reason_cap)
		reason[0] = '\0';
	/* Unknown fields of any wire type are skipped (a newer server). */
	while ((rc = pb_read_field(&r, &f)) > 0) {
		if (f.num == 1 && f.wire == PB_VARINT) {
			*should = f.v != 0;
		} else if (f.num == 2 && f.wire == PB_LEN && reason_cap) {
			size_t k = f.sublen < reason_cap - 1 ? f.sublen : reason_cap - 1;
			memcpy(reason, f.sub, k);
			reason[k] = '\0';
		}
	}
	if (rc < 0)
		return np_errf(err, "ShouldInitiateUploadResponse: malformed protobuf at byte %zu",
			       (size_t)(r.p - (const uint8_t *)data));
	return 0;
}

int np_debuginfo_otel_file_id(int fd, char out[33], struct np_err *err)
{
	static const char hex[] = "0123456789abcdef";
	uint8_t buf[4096], len_be[8], md[EVP_MAX_MD_SIZE];
	unsigned md_len = 0;
	struct stat st;
	EVP_MD_CTX *ctx;
	ssize_t n;
	int rc = -1;

	if (fstat(fd, &st) || st.st_size < 0)
		return np_errno(err, "file ID: stat");
	if (!(ctx = EVP_MD_CTX_new()))
		return np_errf(err, "file ID: out of memory");
	uint64_t size = (uint64_t)st.st_size;
	uint64_t tail = size < sizeof(buf) ? size : sizeof(buf);
	for (int i = 0; i < 8; i++)
		len_be[i] = (uint8_t)(size >> (56 - 8 * i));
	if (!EVP_DigestInit_ex(ctx, EVP_sha256(), NULL))
		goto out;
	/* the head: up to 4 KiB; the tail: the last min(size, 4 KiB) bytes (the Go code's reads) */
	if ((n = pread(fd, buf, sizeof(buf), 0)) < 0 || !EVP_DigestUpdate(ctx, buf, (size_t)n))
		goto out;
	if ((n = pread(fd, buf, (size_t)tail, (off_t)(size - tail))) != (ssize_t)tail ||
	    !EVP_DigestUpdate(ctx, buf, (size_t)n) || !EVP_DigestUpdate(ctx, len_be, sizeof(len_be)) ||
	    !EVP_DigestFinal_ex(ctx, md, &md_len) || md_len < 16)
		goto out;
	for (int i = 0; i < 16; i++) {
		out[2 * i] = hex[md[i] >> 4];
		out[2 * i + 1] = hex[md[i] & 15];
	}
	out[32] = '\0';
	rc = 0;
out:
	EVP_MD_CTX_free(ctx);
	return rc ? np_errf(err, "file ID: cannot read the file") : 0;
}

int np_debuginfo_debuglink(int fd, char *name, size_t cap, uint32_t *crc)
{
	Elf *e;
	size_t shstrndx;
	int rc = -1;

	(void)elf_version(EV_CURRENT);
	if (!(e = elf_begin(fd, ELF_C_READ_MMAP, NULL)))
		return -1;
	if (elf_kind(e) != ELF_K_ELF || elf_getshdrstrndx(e, &shstrndx)) {
		elf_end(e);
		return -1;
	}
	for (Elf_Scn *s = NULL; rc && (s = elf_nextscn(e, s));) {
		GElf_Shdr sh;
		const char *n;
		Elf_Data *d;
		if (!gelf_getshdr(s, &sh) || sh.sh_type != SHT_PROGBITS || !(n = elf_strptr(e, shstrndx, sh.sh_name)) ||
		    strcmp(n, ".gnu_debuglink") || !(d = elf_rawdata(s, NULL)) || !d->d_buf)
			continue;
		/* the name, NUL-padded to 4 bytes, then the CRC in the file's byte order */
		const uint8_t *p = d->d_buf;
		size_t len = strnlen(d->d_buf, d->d_size), at = (len + 4) & ~(size_t)3;
		if (!len || len >= cap || at + 4 > d->d_size || memchr(p, '/', len))
			break;
		memcpy(name, p, len);
		name[len] = '\0';
		const char *ident = elf_getident(e, NULL);
		int msb = ident && ident[EI_DATA] == ELFDATA2MSB;
		*crc = msb ? (uint32_t)p[at] << 24 | (uint32_t)p[at + 1] << 16 | (uint32_t)p[at + 2] << 8 | p[at + 3]
			   : (uint32_t)p[at + 3] << 24 | (uint32_t)p[at + 2] << 16 | (uint32_t)p[at + 1] << 8 | p[at];
		rc = 0;
	}
	elf_end(e);
	return rc;
}

/* The binary's debug file by its .gnu_debuglink in dir, when its CRC matches (the OTel
 * profiler's OpenDebugLink, whose file Alloy uploads instead of the binary): its path into out. */
static int debuglink_file(int exe_fd, const char *dir, char *out, size_t cap)
{
	char name[256];
	uint32_t want, got;
	int fd, ok;

	if (!dir || np_debuginfo_debuglink(exe_fd, name, sizeof(name), &want) ||
	    snprintf(out, cap, "%s/%s", dir, name) >= (int)cap)
		return -1;
	if ((fd = open(out, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)) < 0)
		return -1;
	struct stat st;
	struct np_err err; /* unreadable: no debug file to upload, the binary is */
	ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && np_crc32_fd(fd, (uint64_t)st.st_size, &got, &err) == 0 &&
	     got == want;
	close(fd);
	return ok ? 0 : -1;
}

/* ---- the uploader ---- */

#define FAIL_LOG_INTERVAL (300 * NP_NSEC_PER_SEC)
#define LATER_MAX 256			   /* files another agent is uploading, asked about again later */
#define LATER_NS (300 * NP_NSEC_PER_SEC) /* Alloy's 5 minutes */

struct job {
	char *build_id, *name, *path, *debuglink_dir; /* owned; debuglink_dir may be NULL */
};

struct later {
	char build_id[129];
	int64_t until_ns;
};

struct np_debuginfo_uploader {
	struct np_write_endpoint ep; /* owned copy */
	struct np_debuginfo_options opts;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stop;
	/* The queue: a ring of opts.queue_size jobs. */
	struct job *q;
	size_t head, n;
	/* Build IDs queued or being uploaded (at most queue_size + workers). */
	char **busy;
	size_t n_busy, busy_cap;
	/* Settled build IDs, in two generations of cache_size / 2: a lookup sees both, an
	 * insertion goes to the newer, which retires the older when full. */
	struct np_intern settled[2];
	struct later later[LATER_MAX];
	pthread_t *threads;
	struct np_write_http **http; /* one per worker, aborted by free */
	int n_threads;
	uint64_t counts[NP_DEBUGINFO__RESULTS];
	/* Failures are warned about at most once per FAIL_LOG_INTERVAL (a server away fails every
	 * file every interval), with the count of those not logged. Under mu. */
	struct np_write_lograte fail_log;
	struct np_series *series[NP_DEBUGINFO__RESULTS], *bytes;
};

static const char *const result_names[NP_DEBUGINFO__RESULTS] = { "uploaded", "skipped", "failed", "dropped" };

static void job_free(struct job *j)
{
	free(j->build_id);
	free(j->name);
	free(j->path);
	free(j->debuglink_dir);
	memset(j, 0, sizeof(*j));
}

/* Under mu. */
static int is_settled(struct np_debuginfo_uploader *u, const char *id)
{
	int64_t now = np_mono_ns();
	size_t len = strlen(id);

	if (np_intern_find(&u->settled[0], id, len) || np_intern_find(&u->settled[1], id, len))
		return 1;
	for (size_t i = 0; i < LATER_MAX; i++)
		if (u->later[i].until_ns > now && !strcmp(u->later[i].build_id, id))
			return 1;
	return 0;
}

/* Under mu. Out of memory only forgets (the file is offered to the server again). */
static void settle(struct np_debuginfo_uploader *u, const char *id)
{
	size_t half = u->opts.cache_size / 2 ? u->opts.cache_size / 2 : 1;
	int added;

	if (u->settled[0].n >= half) {
		np_intern_free(&u->settled[1]);
		u->settled[1] = u->settled[0];
		u->settled[0] = (struct np_intern)NP_INTERN_INIT;
	}
	(void)np_intern_add(&u->settled[0], id, strlen(id), &added);
}

/* Under mu: another agent uploads it; asked about again in 5 minutes, as Alloy does. */
static void settle_for_now(struct np_debuginfo_uploader *u, const char *id)
{
	size_t oldest = 0;

	for (size_t i = 1; i < LATER_MAX; i++)
		if (u->later[i].until_ns < u->later[oldest].until_ns)
			oldest = i;
	snprintf(u->later[oldest].build_id, sizeof(u->later[oldest].build_id), "%s", id);
	u->later[oldest].until_ns = np_mono_ns() + LATER_NS;
}

static int is_busy(const struct np_debuginfo_uploader *u, const char *id)
{
	for (size_t i = 0; i < u->n_busy; i++)
		if (!strcmp(u->busy[i], id))
			return 1;
	return 0;
}

static void unbusy(struct np_debuginfo_uploader *u, const char *id)
{
	for (size_t i = 0; i < u->n_busy; i++)
		if (!strcmp(u->busy[i], id)) {
			free(u->busy[i]);
			u->busy[i] = u->busy[--u->n_busy];
			return;
		}
}

static void count(struct np_debuginfo_uploader *u, enum np_debuginfo_result r)
{
	u->counts[r]++;
	np_series_inc(u->series[r]);
}

void np_debuginfo_offer(struct np_debuginfo_uploader *u, const struct np_debuginfo_file *f)
{
	struct job j = { 0 };
	char *busy_id = NULL;

	if (!u || !f->build_id || !f->build_id[0] || strlen(f->build_id) >= sizeof(u->later[0].build_id))
		return;
	pthread_mutex_lock(&u->mu);
	if (u->stop || is_settled(u, f->build_id) || is_busy(u, f->build_id)) {
		pthread_mutex_unlock(&u->mu);
		return;
	}
	if (u->n == u->opts.queue_size || u->n_busy == u->busy_cap) {
		count(u, NP_DEBUGINFO_DROPPED);
		pthread_mutex_unlock(&u->mu);
		np_log(NP_DEBUG, "pyroscope.write", "debug info upload queue full: file dropped", "file", f->name,
		       "build_id", f->build_id, NULL);
		return;
	}
	j.build_id = strdup(f->build_id);
	j.name = strdup(f->name);
	j.path = strdup(f->open_path);
	j.debuglink_dir = f->debuglink_dir ? strdup(f->debuglink_dir) : NULL;
	busy_id = strdup(f->build_id);
	if (!j.build_id || !j.name || !j.path || !busy_id || (f->debuglink_dir && !j.debuglink_dir)) {
		count(u, NP_DEBUGINFO_DROPPED);
		pthread_mutex_unlock(&u->mu);
		job_free(&j);
		free(busy_id);
		return;
	}
	u->busy[u->n_busy++] = busy_id;
	u->q[(u->head + u->n) % u->opts.queue_size] = j;
	u->n++;
	pthread_cond_signal(&u->cv);
	pthread_mutex_unlock(&u->mu);
}

/* One Connect unary call; 0 when it answered 200, with its body in resp. */
static int rpc(struct np_debuginfo_uploader *u, struct np_write_http *h, const char *method, const struct np_buf *req,
	       struct np_buf *resp, char *why, size_t why_cap)
{
	struct np_write_result r;
	char path[128];

	snprintf(path, sizeof(path), NP_DEBUGINFO_SERVICE "%s", method);
	np_write_http_call(h, &u->ep, path, 1, req->p ? req->p : "", req->len, u->ep.remote_timeout_ns, &r, resp);
	if (!r.aborted && !r.transport_error && !r.local_error && r.status == 200)
		return 0;
	snprintf(why, why_cap, "%s: %s%s%ld %.200s", method, r.aborted ? "aborted " : "", r.code[0] ? r.code : "",
		 r.status, r.message);
	return -1;
}

/* An unnamed file for a copy, gone when closed: in $TMPDIR or /tmp, on disk on a node as Alloy
 * writes its copies in its data directory (an anonymous memory file only where the directory
 * takes no O_TMPFILE: a copy of a large binary's DWARF is too big for memory times worker_num). */
static int temp_file(void)
{
	const char *dir = getenv("TMPDIR");
	int fd = open(dir && *dir ? dir : "/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);

	return fd >= 0 ? fd : memfd_create("nodeprof-debuginfo", MFD_CLOEXEC);
}

/* The bytes to send, mapped read-only (the upload reads them straight from the page cache): the
 * file itself, or with strip its copy without .text in a temporary file (gone with the mapping).
 * *strip_failed: the copy could not be made. */
static int map_file(const char *path, int strip, void **data, size_t *len, int *strip_failed, int *gone, char *why,
		    size_t why_cap)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

	*strip_failed = 0;
	*gone = fd < 0 && (errno == ENOENT || errno == ESRCH); /* the process exited, or the file went */
	if (fd >= 0 && strip) {
		struct np_err err;
		int copy = -1;
		if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (copy = temp_file()) < 0 ||
		    np_elf_only_keep_debug(fd, copy, &err)) {
			snprintf(why, why_cap, "%.300s: %.180s", path, copy < 0 ? "not a regular file, or no temporary file" : err.msg);
			*strip_failed = copy >= 0;
			close(fd);
			if (copy >= 0)
				close(copy);
			return -1;
		}
		close(fd);
		fd = copy;
	}
	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size <= 0) {
		snprintf(why, why_cap, "%.400s: not a readable regular file", path);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	*len = (size_t)st.st_size;
	*data = mmap(NULL, *len, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (*data == MAP_FAILED) {
		snprintf(why, why_cap, "%.400s: mmap failed", path);
		return -1;
	}
	return 0;
}

/* The three steps for one file (Alloy's attemptUpload). */
static enum np_debuginfo_result attempt(struct np_debuginfo_uploader *u, struct np_write_http *h, const struct job *j,
					char *why, size_t why_cap, int *gone)
{
	struct np_buf req = NP_BUF_INIT, resp = NP_BUF_INIT;
	struct np_write_result r;
	struct np_err err;
	char reason[256], path[256];
	int should = 0, strip_failed = 0;
	void *data = NULL;
	size_t len = 0;
	enum np_debuginfo_result res = NP_DEBUGINFO_FAILED;

	/* The file is opened first: one this agent cannot read is not announced to the server
	 * (which would then hold it as an upload in progress). */
	int fd = open(j->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	char file_id[33] = "";
	if (fd < 0) {
		*gone = errno == ENOENT || errno == ESRCH;
		snprintf(why, why_cap, "%s: cannot be opened", j->path);
		goto out;
	}
	if (np_debuginfo_otel_file_id(fd, file_id, &err))
		file_id[0] = '\0'; /* optional in the request */
	char debug_path[4608];
	const char *send = debuglink_file(fd, j->debuglink_dir, debug_path, sizeof(debug_path)) ? j->path : debug_path;
	close(fd);
	np_debuginfo_encode_should_initiate(&req, j->build_id, file_id, j->name,
					    u->opts.strip_text ? NP_DEBUGINFO_TYPE_EXECUTABLE_NO_TEXT
							       : NP_DEBUGINFO_TYPE_EXECUTABLE_FULL);
	if (req.failed) {
		snprintf(why, why_cap, "out of memory");
		goto out;
	}
	if (rpc(u, h, "ShouldInitiateUpload", &req, &resp, why, why_cap))
		goto out;
	if (np_debuginfo_decode_should_initiate(resp.p, resp.len, &should, reason, sizeof(reason), &err)) {
		snprintf(why, why_cap, "%.400s", err.msg);
		goto out;
	}
	pthread_mutex_lock(&u->mu);
	if (!should && !strcmp(reason, NP_DEBUGINFO_REASON_IN_PROGRESS))
		settle_for_now(u, j->build_id);
	else if (!should)
		settle(u, j->build_id);
	pthread_mutex_unlock(&u->mu);
	if (!should) {
		res = NP_DEBUGINFO_SKIPPED;
		snprintf(why, why_cap, "%s", reason);
		goto out;
	}
	if (map_file(send, u->opts.strip_text, &data, &len, &strip_failed, gone, why, why_cap)) {
		if (strip_failed) { /* as Alloy: a file that cannot be copied is not tried again */
			pthread_mutex_lock(&u->mu);
			settle(u, j->build_id);
			pthread_mutex_unlock(&u->mu);
		}
		goto out;
	}
	snprintf(path, sizeof(path), NP_DEBUGINFO_SERVICE "Upload/%s", j->build_id); /* hex: nothing to escape */
	np_write_http_call(h, &u->ep, path, 0, data, len, u->ep.debug_info_upload_timeout_ns, &r, NULL);
	if (r.aborted || r.transport_error || r.local_error || r.status != 200) {
		snprintf(why, why_cap, "Upload: %s%ld %.200s", r.aborted ? "aborted " : "", r.status, r.message);
		goto out;
	}
	np_buf_reset(&req);
	np_buf_reset(&resp);
	np_debuginfo_encode_upload_finished(&req, j->build_id);
	if (req.failed || rpc(u, h, "UploadFinished", &req, &resp, why, why_cap))
		goto out;
	np_series_add(u->bytes, (double)len);
	pthread_mutex_lock(&u->mu);
	settle(u, j->build_id);
	pthread_mutex_unlock(&u->mu);
	res = NP_DEBUGINFO_UPLOADED;
out:
	if (data)
		munmap(data, len);
	np_buf_free(&req);
	np_buf_free(&resp);
	return res;
}

struct worker_arg {
	struct np_debuginfo_uploader *u;
	struct np_write_http *h;
};

static void *worker(void *arg)
{
	struct np_debuginfo_uploader *u = ((struct worker_arg *)arg)->u;
	struct np_write_http *h = ((struct worker_arg *)arg)->h;
	free(arg);

	pthread_mutex_lock(&u->mu);
	for (;;) {
		while (!u->stop && u->n == 0)
			pthread_cond_wait(&u->cv, &u->mu);
		if (u->stop)
			break;
		struct job j = u->q[u->head];
		u->head = (u->head + 1) % u->opts.queue_size;
		u->n--;
		pthread_mutex_unlock(&u->mu);
		char why[512] = "";
		int gone = 0;
		enum np_debuginfo_result r = attempt(u, h, &j, why, sizeof(why), &gone);
		uint64_t suppressed = 0;
		int warn = 0;
		pthread_mutex_lock(&u->mu);
		/* A file gone with its process is no news (Alloy says nothing either): offered again
		 * when another process maps it. */
		if (r == NP_DEBUGINFO_FAILED && !gone)
			warn = np_write_lograte_allow(&u->fail_log, np_mono_ns(), FAIL_LOG_INTERVAL, &suppressed);
		pthread_mutex_unlock(&u->mu);
		if (warn)
			np_log(NP_WARN, "pyroscope.write", "debug info upload failed", "file", j.name, "build_id", j.build_id,
			       "error", why, "similar_since_last_log", NP_LOG_INT(suppressed), NULL);
		else
			np_log(NP_DEBUG, "pyroscope.write", "debug info upload", "result", result_names[r], "file", j.name,
			       "build_id", j.build_id, "detail", why, NULL);
		pthread_mutex_lock(&u->mu);
		count(u, r);
		unbusy(u, j.build_id);
		job_free(&j);
	}
	pthread_mutex_unlock(&u->mu);
	return NULL;
}

static int register_series(struct np_debuginfo_uploader *u, struct np_metrics *reg, struct np_err *err)
{
	static const char *const names[] = { "endpoint", "result", NULL };
	char label[256];
	struct np_metric *uploads, *bytes;

	if (!reg)
		reg = np_metrics_global();
	np_write_endpoint_label(&u->ep, label, sizeof(label));
	uploads = np_metrics_counter(reg, "pyroscope_ebpf_debug_info_uploads_total",
				     "Debug info files offered for upload, by result: uploaded, skipped (the server has "
				     "it or wants none), failed, dropped (the queue was full).",
				     names, err);
	/* Alloy's, without labels: the sum over endpoints */
	bytes = np_metrics_counter(reg, "pyroscope_ebpf_debug_info_upload_bytes_total",
				   "Total number of bytes uploaded to the debug info endpoint", NULL, err);
	if (!uploads || !bytes)
		return np_err_wrap(err, "debug info upload metrics");
	for (int i = 0; i < NP_DEBUGINFO__RESULTS; i++) {
		const char *v[] = { label, result_names[i] };
		if (!(u->series[i] = np_metric_series(uploads, v, err)))
			return np_err_wrap(err, "debug info upload metrics");
	}
	if (!(u->bytes = np_metric_series(bytes, NULL, err)))
		return np_err_wrap(err, "debug info upload metrics");
	return 0;
}

int np_debuginfo_uploader_new(const struct np_write_endpoint *ep, const struct np_debuginfo_options *opts,
			      struct np_metrics *reg, struct np_debuginfo_uploader **out, struct np_err *err)
{
	struct np_debuginfo_uploader *u = calloc(1, sizeof(*u));

	if (!u)
		return np_errf(err, "out of memory");
	pthread_mutex_init(&u->mu, NULL);
	pthread_cond_init(&u->cv, NULL);
	u->opts = *opts;
	if (!u->opts.queue_size)
		u->opts.queue_size = 1;
	if (u->opts.workers < 1)
		u->opts.workers = 1;
	u->busy_cap = u->opts.queue_size + (size_t)u->opts.workers;
	u->settled[0] = u->settled[1] = (struct np_intern)NP_INTERN_INIT;
	u->q = calloc(u->opts.queue_size, sizeof(*u->q));
	u->busy = calloc(u->busy_cap, sizeof(*u->busy));
	u->threads = calloc((size_t)u->opts.workers, sizeof(*u->threads));
	u->http = calloc((size_t)u->opts.workers, sizeof(*u->http));
	if (!u->q || !u->busy || !u->threads || !u->http) {
		np_debuginfo_uploader_free(u);
		return np_errf(err, "out of memory");
	}
	if (np_write_endpoint_copy(&u->ep, ep, err) || register_series(u, reg, err)) {
		np_debuginfo_uploader_free(u);
		return -1;
	}
	for (int i = 0; i < u->opts.workers; i++) {
		struct worker_arg *a = malloc(sizeof(*a));
		if (!a || !(u->http[i] = np_write_http_new(err))) {
			free(a);
			np_debuginfo_uploader_free(u);
			return a ? -1 : np_errf(err, "out of memory");
		}
		*a = (struct worker_arg){ u, u->http[i] };
		if (pthread_create(&u->threads[i], NULL, worker, a)) {
			free(a);
			np_debuginfo_uploader_free(u);
			return np_errf(err, "debug info upload: cannot start a worker thread");
		}
		u->n_threads++;
	}
	*out = u;
	return 0;
}

void np_debuginfo_uploader_free(struct np_debuginfo_uploader *u)
{
	if (!u)
		return;
	pthread_mutex_lock(&u->mu);
	u->stop = 1;
	pthread_cond_broadcast(&u->cv);
	pthread_mutex_unlock(&u->mu);
	for (int i = 0; i < u->n_threads; i++)
		np_write_http_abort(u->http[i]);
	for (int i = 0; i < u->n_threads; i++)
		pthread_join(u->threads[i], NULL);
	for (int i = 0; u->http && i < u->opts.workers; i++)
		np_write_http_free(u->http[i]);
	for (size_t i = 0; u->q && i < u->n; i++)
		job_free(&u->q[(u->head + i) % u->opts.queue_size]);
	for (size_t i = 0; i < u->n_busy; i++)
		free(u->busy[i]);
	np_intern_free(&u->settled[0]);
	np_intern_free(&u->settled[1]);
	np_write_endpoint_free(&u->ep);
	free(u->q);
	free(u->busy);
	free(u->threads);
	free(u->http);
	pthread_cond_destroy(&u->cv);
	pthread_mutex_destroy(&u->mu);
	free(u);
}

void np_debuginfo_uploader_counts(struct np_debuginfo_uploader *u, uint64_t out[NP_DEBUGINFO__RESULTS])
{
	pthread_mutex_lock(&u->mu);
	memcpy(out, u->counts, sizeof(u->counts));
	pthread_mutex_unlock(&u->mu);
}
