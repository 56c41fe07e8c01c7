/* The file namespace: file.path_join (Go's filepath.Join: the non-empty parts
 * joined with "/", then Clean). */
#include <string.h>

#include "agent/config/eval.h"
#include "agent/config/stdlib/stdlib_internal.h"
/* ---- file.path_join: filepath.Join, i.e. join non-empty parts with "/" and Clean ---- */

static void clean_path(const char *p, size_t n, struct np_buf *out)
{
	int rooted = n > 0 && p[0] == '/';
	size_t start = out->len, dotdot = rooted ? 1 : 0, i = rooted ? 1 : 0;

	if (n == 0) {
		np_buf_putc(out, '.');
		return;
	}
	if (rooted)
		np_buf_putc(out, '/');
	dotdot += start;
	while (i < n) {
		if (p[i] == '/') {
			i++;
		} else if (p[i] == '.' && (i + 1 == n || p[i + 1] == '/')) {
			i++;
		} else if (p[i] == '.' && p[i + 1] == '.' && (i + 2 == n || p[i + 2] == '/')) {
			i += 2;
			if (out->len > dotdot) {
				/* Back up to the previous separator. */
				out->len--;
				while (out->len > dotdot && out->p[out->len] != '/')
					out->len--;
			} else if (!rooted) {
				if (out->len > start)
					np_buf_putc(out, '/');
				np_buf_puts(out, "..");
				dotdot = out->len;
			}
		} else {
			if ((rooted && out->len != start + 1) || (!rooted && out->len != start))
				np_buf_putc(out, '/');
			for (; i < n && p[i] != '/'; i++)
				np_buf_putc(out, p[i]);
		}
	}
	if (out->len == start)
		np_buf_putc(out, '.');
	np_buf_putc(out, '\0');
	out->len--;
}

struct cfg_value *cfg_fn_path_join(struct cfg_call *c)
{
	struct np_buf joined = NP_BUF_INIT, out = NP_BUF_INIT;
	int any = 0;

	for (size_t i = 0; i < c->n; i++) {
		const char *s;
		size_t n;
		struct cfg_value *tmp;
		if (cfg_arg_string(c, i, &s, &n, &tmp)) {
			np_buf_free(&joined);
			return NULL;
		}
		if (n) {
			if (any)
				np_buf_putc(&joined, '/');
			np_buf_append(&joined, s, n);
			any = 1;
		}
		cfg_unref(tmp);
	}
	if (!any) {
		np_buf_free(&joined);
		struct cfg_value *r = cfg_string("", 0);
		return r ? r : cfg_fn_oom(c);
	}
	clean_path(joined.p, joined.len, &out);
	np_buf_free(&joined);
	return cfg_fn_result_string(c, &out);
}
