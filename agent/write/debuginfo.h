/* Debug information upload to Pyroscope, as Alloy's pyroscope.ebpf does it with debug_info
 * { upload = true } (reporter/parca/reporter/pyroscope_uploader.go; spec:
 * docs/specs/debuginfo.md): for each ELF file with a GNU build ID seen in samples, once,
 *   1. ShouldInitiateUpload, a Connect unary call (application/proto) of
 *      debuginfo.v1alpha1.DebuginfoService with the file's metadata;
 *   2. when the server wants it, a plain POST of the whole file to
 *      <url>/debuginfo.v1alpha1.DebuginfoService/Upload/<build ID>;
 *   3. UploadFinished with the build ID.
 * Each pyroscope.write endpoint has its own uploader: a bounded queue (a full queue drops
 * the offer and counts it), worker threads, a bounded set of build IDs already settled
 * (cache_size: uploaded, or refused by the server) and the set in progress, so that nothing
 * is offered to the server twice while remembered. Offering never blocks: sampling and
 * pushes never wait for the server. */
#ifndef NP_WRITE_DEBUGINFO_H
#define NP_WRITE_DEBUGINFO_H

#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"
#include "lib/strbuf.h"

struct np_write_endpoint;
struct np_metrics;

#define NP_DEBUGINFO_SERVICE "/debuginfo.v1alpha1.DebuginfoService/"
/* ShouldInitiateUploadResponse.reason of an upload another agent is doing (Alloy retries
 * such a file after 5 minutes instead of never). */
#define NP_DEBUGINFO_REASON_IN_PROGRESS                                                                   \
	"A previous upload is still in-progress and not stale yet (only stale uploads can be retried)."

/* FileMetadata.Type */
enum np_debuginfo_type { NP_DEBUGINFO_TYPE_EXECUTABLE_FULL = 1, NP_DEBUGINFO_TYPE_EXECUTABLE_NO_TEXT = 2 };

/* ---- the messages (pure; unit tested) ---- */

/* ShouldInitiateUploadRequest{file: FileMetadata{gnu_build_id, otel_file_id (NULL or "": left
 * out), name, type}} into out. */
void np_debuginfo_encode_should_initiate(struct np_buf *out, const char *build_id, const char *otel_file_id,
					 const char *name, enum np_debuginfo_type type);
/* The OpenTelemetry profiler's FileID of the file open as fd (libpf.FileIDFromExecutableReader:
 * SHA-256 of its first 4 KiB, its last 4 KiB and its size as 8 big-endian bytes, the first 16
 * bytes of it) as 32 lowercase hex digits into out[33]. */
NP_MUST_CHECK int np_debuginfo_otel_file_id(int fd, char out[33], struct np_err *err);
/* UploadFinishedRequest{gnu_build_id} into out. */
void np_debuginfo_encode_upload_finished(struct np_buf *out, const char *build_id);
/* ShouldInitiateUploadResponse: *should and reason (NUL-terminated, cut to cap) from the server's
 * bytes (untrusted; fuzzed). -1 with err for bytes that are no such message. */
NP_MUST_CHECK int np_debuginfo_decode_should_initiate(const void *data, size_t len, int *should, char *reason,
						      size_t reason_cap, struct np_err *err);

/* The .gnu_debuglink of the ELF file open as fd (untrusted; fuzzed): the debug file's name
 * (NUL-terminated, no '/', into name[cap]) and its CRC-32. -1 when the file has none or it is
 * malformed. */
int np_debuginfo_debuglink(int fd, char *name, size_t cap, uint32_t *crc);

/* ---- the uploader ---- */

/* debug_info's knobs (Alloy's debuginfo.Arguments; the defaults are Alloy's). */
struct np_debuginfo_options {
	size_t cache_size; /* build IDs remembered as settled; default 262144 */
	size_t queue_size; /* offers waiting for a worker; default 256 */
	int workers;	   /* upload threads; default 16 */
	int strip_text;	   /* strip_text_section: send the copy of elf_strip.h (TYPE_EXECUTABLE_NO_TEXT) */
};

/* A file to upload: its build ID (lowercase hex), the name the server keeps (its base name),
 * where this agent reads it (/proc/PID/root/PATH), and where its .gnu_debuglink file would be
 * (/proc/PID/root/usr/lib/debug/DIR of PATH; NULL: not looked for): that file, when its CRC
 * matches, is sent instead, as Alloy sends it. */
struct np_debuginfo_file {
	const char *build_id, *name, *open_path, *debuglink_dir;
};

/* Outcomes, counted per endpoint in pyroscope_ebpf_debug_info_uploads_total{result}. */
enum np_debuginfo_result {
	NP_DEBUGINFO_UPLOADED, /* the three steps succeeded */
	NP_DEBUGINFO_SKIPPED,  /* the server has it or wants none (ShouldInitiateUpload false) */
	NP_DEBUGINFO_FAILED,   /* an RPC, the upload or reading the file failed: offered again later */
	NP_DEBUGINFO_DROPPED,  /* the queue was full: offered again later */
	NP_DEBUGINFO__RESULTS
};

struct np_debuginfo_uploader;

/* Copies ep (the pyroscope.write endpoint: URL, HTTP client settings, headers, and
 * debug_info_upload_timeout for each step) and starts opts->workers threads. reg: NULL for the
 * global registry. */
NP_MUST_CHECK int np_debuginfo_uploader_new(const struct np_write_endpoint *ep, const struct np_debuginfo_options *opts,
					    struct np_metrics *reg, struct np_debuginfo_uploader **out,
					    struct np_err *err);
/* Never blocks on the network: a file not settled nor in progress is queued, or dropped and
 * counted when the queue is full. */
void np_debuginfo_offer(struct np_debuginfo_uploader *u, const struct np_debuginfo_file *f);
/* Aborts the transfers running, joins the workers, frees what is queued. NULL is a no-op. */
void np_debuginfo_uploader_free(struct np_debuginfo_uploader *u);
/* Outcomes so far (index: enum np_debuginfo_result), for tests and debug pages. */
void np_debuginfo_uploader_counts(struct np_debuginfo_uploader *u, uint64_t out[NP_DEBUGINFO__RESULTS]);

#endif
