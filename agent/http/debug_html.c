/* Debug pages as HTML: a provider's JSON rendered as tables (an array of objects
 * becomes one table with a column per key, an object a key/value table), every
 * string escaped. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "agent/http/internal.h"

#define MAX_DEPTH 6
#define MAX_COLUMNS 64

void np_httpd_html_escape(struct np_buf *out, const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		switch (s[i]) {
		case '<': np_buf_puts(out, "&lt;"); break;
		case '>': np_buf_puts(out, "&gt;"); break;
		case '&': np_buf_puts(out, "&amp;"); break;
		case '"': np_buf_puts(out, "&quot;"); break;
		case '\'': np_buf_puts(out, "&#39;"); break;
		default: np_buf_putc(out, s[i]);
		}
	}
}

static void render(struct np_buf *out, json_t *v, int depth);

static void render_compact(struct np_buf *out, json_t *v)
{
	char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	if (s) {
		np_httpd_html_escape(out, s, strlen(s));
		free(s);
	}
}

static int all_objects(json_t *arr)
{
	size_t i;
	json_t *e;

	if (json_array_size(arr) == 0)
		return 0;
	json_array_foreach(arr, i, e) if (!json_is_object(e)) return 0;
	return 1;
}

static void render_table(struct np_buf *out, json_t *arr, int depth)
{
	const char *cols[MAX_COLUMNS];
	size_t ncols = 0, i;
	json_t *row;

	json_array_foreach(arr, i, row)
	{
		const char *k;
		json_t *cell;
		json_object_foreach(row, k, cell)
		{
			size_t c;
			for (c = 0; c < ncols && strcmp(cols[c], k); c++)
				;
			if (c == ncols && ncols < MAX_COLUMNS)
				cols[ncols++] = k;
		}
	}
	np_buf_printf(out, "<p class=\"count\">%zu rows</p><table><thead><tr>", json_array_size(arr));
	for (size_t c = 0; c < ncols; c++) {
		np_buf_puts(out, "<th>");
		np_httpd_html_escape(out, cols[c], strlen(cols[c]));
		np_buf_puts(out, "</th>");
	}
	np_buf_puts(out, "</tr></thead><tbody>");
	json_array_foreach(arr, i, row)
	{
		np_buf_puts(out, "<tr>");
		for (size_t c = 0; c < ncols; c++) {
			json_t *cell = json_object_get(row, cols[c]);
			np_buf_puts(out, "<td>");
			if (cell)
				render(out, cell, depth + 1);
			np_buf_puts(out, "</td>");
		}
		np_buf_puts(out, "</tr>");
	}
	np_buf_puts(out, "</tbody></table>");
}

static void render(struct np_buf *out, json_t *v, int depth)
{
	if (depth > MAX_DEPTH) {
		render_compact(out, v);
		return;
	}
	if (json_is_string(v)) {
		np_httpd_html_escape(out, json_string_value(v), json_string_length(v));
	} else if (json_is_array(v)) {
		if (all_objects(v)) {
			render_table(out, v, depth);
		} else {
			size_t i;
			json_t *e;
			np_buf_puts(out, "<ul>");
			json_array_foreach(v, i, e)
			{
				np_buf_puts(out, "<li>");
				render(out, e, depth + 1);
				np_buf_puts(out, "</li>");
			}
			np_buf_puts(out, "</ul>");
		}
	} else if (json_is_object(v)) {
		const char *k;
		json_t *e;
		np_buf_puts(out, "<table class=\"kv\"><tbody>");
		json_object_foreach(v, k, e)
		{
			np_buf_puts(out, "<tr><th>");
			np_httpd_html_escape(out, k, strlen(k));
			np_buf_puts(out, "</th><td>");
			render(out, e, depth + 1);
			np_buf_puts(out, "</td></tr>");
		}
		np_buf_puts(out, "</tbody></table>");
	} else {
		render_compact(out, v);
	}
}

void np_httpd_json_to_html(const char *title, const char *json, size_t len, struct np_buf *out)
{
	json_error_t jerr;
	json_t *doc = json_loadb(json, len, JSON_DECODE_ANY, &jerr);

	np_buf_puts(out, "<!doctype html><html><head><meta charset=\"utf-8\"><title>");
	np_httpd_html_escape(out, title, strlen(title));
	np_buf_puts(out, " - nodeprof</title><style>"
			 "body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse;font-size:13px}"
			 "th,td{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top}"
			 "th{background:#f3f3f3}.count{color:#666}</style></head><body><p><a href=\"/debug/\">"
			 "debug pages</a></p><h1>");
	np_httpd_html_escape(out, title, strlen(title));
	np_buf_puts(out, "</h1>");
	if (!doc) {
		np_buf_puts(out, "<p>The provider returned invalid JSON:</p><pre>");
		np_httpd_html_escape(out, json, len);
		np_buf_puts(out, "</pre>");
	} else {
		render(out, doc, 0);
		json_decref(doc);
	}
	np_buf_puts(out, "</body></html>\n");
}
