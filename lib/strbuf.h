/* A growable byte buffer, always NUL-terminated, for building text and binary
 * output (JSON, folded stacks, protobuf). An allocation failure is sticky: the
 * buffer stops growing, `failed` is set, and the owner reports it once at the end
 * instead of checking every append. */
#ifndef NP_LIB_STRBUF_H
#define NP_LIB_STRBUF_H

#include <stdarg.h>
#include <stddef.h>

#include "lib/error.h"

struct np_buf {
	char *p;    /* owned; NULL until the first append */
	size_t len; /* bytes used, not counting the terminating NUL */
	size_t cap;
	int failed; /* an allocation failed; contents are truncated */
};

#define NP_BUF_INIT { NULL, 0, 0, 0 }

void np_buf_free(struct np_buf *b);
void np_buf_reset(struct np_buf *b); /* len = 0, keeps the allocation */
int np_buf_reserve(struct np_buf *b, size_t extra);
void np_buf_append(struct np_buf *b, const void *data, size_t len);
void np_buf_puts(struct np_buf *b, const char *s);
void np_buf_putc(struct np_buf *b, char c);
void np_buf_printf(struct np_buf *b, const char *fmt, ...) NP_PRINTF(2, 3);
void np_buf_vprintf(struct np_buf *b, const char *fmt, va_list ap) NP_PRINTF(2, 0);
/* Hands the contents to the caller (who frees them) and empties the buffer. */
char *np_buf_steal(struct np_buf *b, size_t *len);

/* Appends s[0..len) as a quoted JSON string: quotes, backslashes and control
 * characters escaped, invalid UTF-8 replaced by U+FFFD (JSON must be UTF-8). The one string
 * escaper: json_writer.h and everything else that writes JSON use it. */
void np_buf_json_str(struct np_buf *b, const char *s, size_t len);
/* The same, byte for byte as Go's json.Marshal writes it (for the configuration's
 * encoding.to_json and json_encode): also \n, \r and \t in short form, '<', '>', '&',
 * U+2028 and U+2029 as \u escapes (encoding/json's HTML-safe default). */
void np_buf_json_str_go(struct np_buf *b, const char *s, size_t len);

/* strdup for copying optional settings: NULL stays NULL, and a failed copy sets *failed
 * (so that a run of copies is checked once). The caller frees the result. */
char *np_strdup_or_null(const char *s, int *failed);
/* 1 when two optional settings are the same: unset (NULL) and empty are alike. */
int np_setting_eq(const char *a, const char *b);

/* Frees a string that may hold a secret (token, password, key), wiping it first.
 * NULL is a no-op. */
void np_secret_free(char *s);

#endif
