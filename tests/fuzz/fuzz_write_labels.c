/* libFuzzer target for the parts of pyroscope.write fed by remote or host-controlled
 * data: label sets from discovery (names and values of any bytes) through
 * np_write_prepare_labels and np_write_encode_push, and server responses through the
 * Connect error parser and the Retry-After parser. Checks the label invariants the
 * server relies on: sorted unique names in [A-Za-z0-9_.] (except __name__), valid UTF-8
 * values within the length limit, at most max_label_names labels, __name__ present.
 *
 * Input: label pairs "name\x01value\x02..." up to a 0x03 byte; the rest is a response body. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/write/internal.h"

static int valid_utf8(const unsigned char *s)
{
	while (*s) {
		size_t n = *s < 0x80 ? 1 : (*s >> 5) == 6 ? 2 : (*s >> 4) == 14 ? 3 : (*s >> 3) == 30 ? 4 : 0;
		if (!n)
			return 0;
		for (size_t i = 1; i < n; i++)
			if ((s[i] & 0xc0) != 0x80)
				return 0;
		s += n;
	}
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct np_labels in = NP_LABELS_INIT, ext = NP_LABELS_INIT, out = NP_LABELS_INIT;
	struct np_write_limits lim = { .max_label_names = 8, .max_label_name_length = 16,
				       .max_label_value_length = 24, .max_profile_bytes = 1024 };
	struct np_write_fixes fx;
	struct np_write_result r;
	struct np_err err;
	const char *reason;
	char *copy = malloc(size + 1), *p, *end;

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	copy[size] = '\0';
	end = copy + strlen(copy); /* labels stop at the first NUL too */
	p = copy;
	while (p < end && *p != '\x03') {
		char *pair_end = p + strcspn(p, "\x02\x03"), *sep;
		char saved = *pair_end;
		*pair_end = '\0';
		sep = strchr(p, '\x01');
		if (sep) {
			*sep = '\0';
			if (np_labels_set(&in, p, sep + 1, &err))
				abort();
		}
		*pair_end = saved;
		p = pair_end + (saved == '\x02');
		if (saved == '\x03')
			break;
	}
	(void)np_labels_set(&ext, "cluster", "c1", &err);
	if (np_write_prepare_labels(&in, &ext, &lim, &out, &fx, &reason, &err) == 0) {
		struct np_buf b = NP_BUF_INIT;
		size_t budget = lim.max_label_names - (np_labels_get(&out, "service_name") ? 0 : 1);
		if (!np_labels_get(&out, "__name__") || out.n > budget)
			abort();
		for (size_t i = 0; i < out.n; i++) {
			if (i && strcmp(out.v[i - 1].name, out.v[i].name) >= 0)
				abort();
			if (strcmp(out.v[i].name, "__name__") != 0 && !np_label_name_pyroscope(out.v[i].name, strlen(out.v[i].name)))
				abort();
			if (strlen(out.v[i].name) > lim.max_label_name_length ||
			    strlen(out.v[i].value) > lim.max_label_value_length || !*out.v[i].value ||
			    !valid_utf8((const unsigned char *)out.v[i].value))
				abort();
		}
		if (np_write_encode_push(&out, data, size, &b, &err))
			abort();
		np_buf_free(&b);
	}
	/* The rest of the input as a server response. */
	if (p < copy + size) {
		size_t rest = size - (size_t)(p - copy);
		memset(&r, 0, sizeof(r));
		(void)np_write_parse_connect_error(p, rest, &r);
		(void)np_write_parse_retry_after(p, 0);
		(void)np_write_uncompressed_size((const uint8_t *)p, rest);
	}
	np_labels_free(&in);
	np_labels_free(&ext);
	np_labels_free(&out);
	free(copy);
	return 0;
}
