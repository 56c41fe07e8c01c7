/* Secret files (tokens, passwords): see file.h. */
#include "k8s/file.h"

#include <string.h>

#include "lib/file.h"

char *k8s_read_secret_file(const char *path, size_t max, struct np_err *err)
{
	size_t n;
	char *s = np_read_file(path, max, &n, err);

	if (!s)
		return NULL;
	size_t start = 0;

	/* strings.TrimSpace, as client-go and Prometheus apply to token files. */
	while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
		s[--n] = '\0';
	while (start < n && (s[start] == '\n' || s[start] == '\r' || s[start] == ' ' || s[start] == '\t'))
		start++;
	memmove(s, s + start, n - start + 1);
	return s;
}
